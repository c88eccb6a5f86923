package gateway_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/configadmin from what the handlers answer")

// TestConfigAdminGolden drives the config admin API through HTTP from the
// golden files in testdata/configadmin: each holds the stored file
// (config.json; absent: no file), the request ("METHOD PATH", then the
// body), and what must follow: the response (its status, then the exact
// body) and the file after (config.json.after; absent: still no file).
// go test -run TestConfigAdminGolden -update rewrites the expectations.
func TestConfigAdminGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "configadmin", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ar := parseTxtar(data)
			a := newAdminAPI(t, string(ar.get("config.json")))
			reqText, ok := ar.lookup("request")
			if !ok {
				t.Fatal("no request section")
			}
			line, body, _ := strings.Cut(string(reqText), "\n")
			method, path, _ := strings.Cut(line, " ")
			req, err := http.NewRequest(method, a.url+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer admin")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(raw, []byte(adminCanary)) {
				t.Errorf("the response shows the adminCanary secret: %s", raw)
			}
			gotResponse := []byte(strconv.Itoa(resp.StatusCode) + "\n" + string(raw))
			gotFile, err := os.ReadFile(a.path)
			if errors.Is(err, fs.ErrNotExist) {
				gotFile = nil
			} else if err != nil {
				t.Fatal(err)
			}
			if *update {
				ar.set("response", gotResponse)
				ar.set("config.json.after", gotFile)
				if err := os.WriteFile(file, ar.format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := ar.get("response"); !bytes.Equal(gotResponse, want) {
				t.Errorf("response:\n got %s\nwant %s", gotResponse, want)
			}
			if want := ar.get("config.json.after"); !bytes.Equal(gotFile, want) {
				t.Errorf("config.json after:\n got %s\nwant %s", gotFile, want)
			}
		})
	}
}

// txtar is a golden file: a comment, then "-- name --" sections (the
// golang.org/x/tools/txtar format, read here to add no dependency).
type txtar struct {
	comment []byte
	names   []string
	data    map[string][]byte
}

func parseTxtar(b []byte) *txtar {
	ar := &txtar{data: map[string][]byte{}}
	cur := ""
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		trimmed := bytes.TrimRight(line, "\n")
		if bytes.HasPrefix(trimmed, []byte("-- ")) && bytes.HasSuffix(trimmed, []byte(" --")) && len(trimmed) > 6 {
			cur = string(trimmed[3 : len(trimmed)-3])
			ar.names = append(ar.names, cur)
			ar.data[cur] = []byte{}
			continue
		}
		if cur == "" {
			ar.comment = append(ar.comment, line...)
		} else {
			ar.data[cur] = append(ar.data[cur], line...)
		}
	}
	return ar
}

func (ar *txtar) lookup(name string) ([]byte, bool) {
	d, ok := ar.data[name]
	return d, ok
}

// get is a section's content, nil when the file has no such section.
func (ar *txtar) get(name string) []byte {
	d, ok := ar.data[name]
	if !ok {
		return nil
	}
	return d
}

// set replaces a section (nil removes it); content gets a final newline
// in the file, which get does not return for a body that had none.
func (ar *txtar) set(name string, content []byte) {
	if content == nil {
		delete(ar.data, name)
		for i, n := range ar.names {
			if n == name {
				ar.names = append(ar.names[:i], ar.names[i+1:]...)
				break
			}
		}
		return
	}
	if _, ok := ar.data[name]; !ok {
		ar.names = append(ar.names, name)
	}
	ar.data[name] = content
}

func (ar *txtar) format() []byte {
	var b bytes.Buffer
	b.Write(ar.comment)
	for _, n := range ar.names {
		b.WriteString("-- " + n + " --\n")
		b.Write(ar.data[n])
		if d := ar.data[n]; len(d) > 0 && d[len(d)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
