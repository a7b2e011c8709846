package seal

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"

// randomText is n characters of seeded noise, about six bits of entropy a
// character: it barely compresses.
func randomText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

var vocabulary = strings.Fields(`the a memory row epoch chain kint sibyl agent note rule release gate deadline
	plan score recovery session wrote checked against entity state reference journal body status active archived
	because when after before should never always keep push pull mount file directory owner space tenant
	café ünïcode 🔥 naïve résumé ﬁrst`)

// proseText is n bytes (roughly) of seeded word salad with numbers: it
// compresses about as well as real notes do.
func proseText(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(vocabulary[r.IntN(len(vocabulary))])
		if r.IntN(6) == 0 {
			b.WriteByte(' ')
			b.WriteString(strconv.Itoa(r.IntN(100000)))
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// proseRows are n entity rows with bodies of about size bytes.
func proseRows(seed uint64, n, size int) []Row {
	rows := make([]Row, n)
	cat := "notes"
	status := "active"
	for i := range rows {
		body := `{"name":"n` + strconv.Itoa(i) + `","text":"` + proseText(seed+uint64(i), size-40) + `"}`
		rows[i] = Row{Tier: TierEntity, Key: "note-" + strconv.Itoa(i), Category: &cat, Status: &status, Body: bodyp(&body)}
	}
	return rows
}
