package storetest

import "strings"

// ValidID is the id rule of DESIGN §1, ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$,
// written out without regular expressions and apart from dispatch.ValidID:
// the model by which the fuzz tests of dispatch and api judge ids.
func ValidID(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._:-", rune(c))) {
			return false
		}
	}
	return true
}
