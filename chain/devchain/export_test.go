package devchain

// SetWatchStarting sets, for a test, what runs as the transaction watcher starts.
func SetWatchStarting(f func()) { watchStarting = f }
