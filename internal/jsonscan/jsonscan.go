// Package jsonscan checks JSON (Valid, as encoding/json's) and reads the
// top-level members of an object, or the elements of an array, that is
// already known to be valid without decoding it: the hot paths that only
// need to find a few members (a REST call's body, a server's reply line)
// use it instead of a reflective decode.
package jsonscan

// Members calls visit with the key and value of each member of body, a
// valid JSON object, in order, until visit returns false. The key is the
// raw text between its quotes and the value a slice of body (capped, so an
// append to it copies). It reports false when visit did, when body is not
// an object, or when a key has an escape (its text would not be its name).
// body must be valid JSON: on other input the result is unspecified.
func Members(body []byte, visit func(key, value []byte) bool) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return false
	}
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return true
	}
	for {
		end := skipValue(body, i) // the key, a string
		key := body[i+1 : end-1]
		for _, c := range key {
			if c == '\\' {
				return false
			}
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past the colon
		end = skipValue(body, i)
		if !visit(key, body[i:end:end]) {
			return false
		}
		i = skipSpace(body, end)
		if body[i] == '}' {
			return true
		}
		i = skipSpace(body, i+1) // past the comma
	}
}

// Elements calls visit with each element of body, a valid JSON array, in
// order, until visit returns false; each is a slice of body (capped). It
// reports false when visit did or when body is not an array. body must be
// valid JSON: on other input the result is unspecified.
func Elements(body []byte, visit func(value []byte) bool) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		return false
	}
	i = skipSpace(body, i+1)
	if body[i] == ']' {
		return true
	}
	for {
		end := skipValue(body, i)
		if !visit(body[i:end:end]) {
			return false
		}
		i = skipSpace(body, end)
		if body[i] == ']' {
			return true
		}
		i = skipSpace(body, i+1) // past the comma
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the value that starts at b[i] in valid JSON.
func skipValue(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}
