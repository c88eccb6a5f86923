package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/antler-mcp/antler/internal/envvar"
)

// Environment variables that name the configuration file, in precedence order
// after the --config flag. DeerFlow's own variable is honoured so an existing
// deployment works unchanged.
const (
	EnvPath         = "ANTLER_EXTENSIONS_CONFIG"
	EnvDeerFlowPath = "DEER_FLOW_EXTENSIONS_CONFIG_PATH"
)

// DefaultNames are looked for in the working directory when nothing names a
// file explicitly.
var DefaultNames = []string{"extensions_config.json", "mcp_config.json"}

// ErrExplicitMissing is wrapped by ResolvePath when a file named by the flag
// or an environment variable does not exist.
var ErrExplicitMissing = errors.New("extensions config file not found")

// ResolvePath finds the configuration file: explicit (the --config flag) >
// $ANTLER_EXTENSIONS_CONFIG > $DEER_FLOW_EXTENSIONS_CONFIG_PATH >
// ./extensions_config.json > ./mcp_config.json. A file named explicitly that
// does not exist is an error wrapping ErrExplicitMissing; finding nothing
// otherwise returns "" and no error (no servers configured).
func ResolvePath(explicit string, lookup envvar.Lookup) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("resolve extensions config path: %w", err)
	}
	path, source := Locate(explicit, lookup, dir)
	if source == "" {
		return path, nil
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w: specified by %s at %s", ErrExplicitMissing, source, path)
	}
	return path, nil
}

// Locate is the quiet form of ResolvePath for the hot path: relative names
// resolve against dir, and a file named explicitly is returned without
// checking that it exists (source names the flag or variable that named it;
// it is empty for a default file found in dir, or when nothing was found).
func Locate(explicit string, lookup envvar.Lookup, dir string) (path, source string) {
	if lookup == nil {
		lookup = envvar.OS
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	if explicit != "" {
		return abs(explicit), "--config"
	}
	for _, name := range []string{EnvPath, EnvDeerFlowPath} {
		if v, _ := lookup(name); v != "" {
			return abs(v), "environment variable " + name
		}
	}
	for _, name := range DefaultNames {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, ""
		}
	}
	return "", ""
}

// MaxFileSize is the largest extensions_config.json Antler reads (4 MiB, far
// past any real configuration). A larger file is refused by its size alone,
// so the hot path never reads or hashes it.
const MaxFileSize int64 = 4 << 20

// ErrFileTooLarge is wrapped when the configuration file exceeds MaxFileSize.
var ErrFileTooLarge = errors.New("extensions config file is too large")

// Signature identifies one revision of a file: its modification time, size and
// SHA-256 of the whole content. The hash is always computed, so a same-second,
// same-size swap is caught too.
type Signature struct {
	ModTime int64 // unix nanoseconds
	Size    int64
	SHA256  string // hex; empty when the file could be stat'ed but not read
}

// Verifiable reports whether the signature proves a content revision.
func (s Signature) Verifiable() bool { return s.SHA256 != "" }

// Fingerprint returns the content fingerprint (size, mtime, SHA-256) of the
// file at path, or ok=false when it cannot be
// stat'ed (for example it was deleted).
func Fingerprint(path string) (sig Signature, ok bool) {
	var s Signer
	return s.Fingerprint(path)
}

// Signer computes signatures reusing one read buffer, for the hot path that
// checks the file on every read. It is not safe for concurrent use.
type Signer struct {
	// Limit, when positive, is the largest file that is read and hashed: a
	// larger one gets a signature of its mtime and size only (not
	// Verifiable), from the stat alone.
	Limit int64
	buf   []byte
	// last is the most recent file read and hashed, for the stat-only fast path.
	last Revision
}

// ConfigSigner is the Signer for extensions_config.json: files above
// MaxFileSize are never read.
func ConfigSigner() Signer { return Signer{Limit: MaxFileSize} }

// Fingerprint is the package-level Fingerprint with the signer's buffer.
//
// A file whose device, inode, size, mtime and ctime are those of the last
// one hashed returns that signature from one stat, without reading it,
// while the bounds of Revision.Check hold.
func (s *Signer) Fingerprint(path string) (sig Signature, ok bool) {
	if l := s.last; l.Path == path && l.Sig.Verifiable() && l.Check(StatFile(path), time.Now()) == Fresh {
		return l.Sig, true
	}
	r, ok := s.Read(path)
	return r.Sig, ok
}

// Read always reads and hashes the file at path (ok=false when it cannot be
// stat'ed, or is a directory) and returns its signature with the identity
// the open file had, so that Revision.Check can later tell from one stat
// whether it may have changed.
func (s *Signer) Read(path string) (r Revision, ok bool) {
	now := time.Now().UnixNano() // before the open: a write after it is after readAt
	s.last = Revision{}
	f, err := os.Open(path)
	if err != nil {
		if st, serr := os.Stat(path); serr == nil && !st.IsDir() {
			r = Revision{Path: path, Sig: Signature{ModTime: st.ModTime().UnixNano(), Size: st.Size()}, readAt: now}
			r.id, r.idOK = fileIDOf(st)
			return r, true // present, unreadable
		}
		return Revision{}, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		return Revision{}, false
	}
	r = Revision{Path: path, Sig: Signature{ModTime: st.ModTime().UnixNano(), Size: st.Size()}, readAt: now}
	r.id, r.idOK = fileIDOf(st)
	if s.Limit > 0 && st.Size() > s.Limit {
		return r, true
	}
	if int64(cap(s.buf)) < st.Size() {
		s.buf = make([]byte, st.Size(), st.Size()+512)
	}
	// Read exactly the size fstat reported: a file that grows meanwhile gets a
	// signature that the next check will see change.
	buf := s.buf[:st.Size()]
	if _, err := io.ReadFull(f, buf); err != nil {
		return r, true
	}
	sum := sha256.Sum256(buf)
	r.Sig.SHA256 = hex.EncodeToString(sum[:])
	if r.idOK {
		s.last = r
	}
	return r, true
}

// LoadError is a configuration file that could not be read or parsed. Its
// message names the file and the fields, never a value.
type LoadError struct {
	Path string
	Err  error
}

func (e *LoadError) Error() string {
	var syn *SyntaxError
	if errors.As(e.Err, &syn) {
		return fmt.Sprintf("extensions config file at %s is %s", e.Path, syn.Error())
	}
	return fmt.Sprintf("load extensions config from %s: %s", e.Path, e.Err.Error())
}

func (e *LoadError) Unwrap() error { return e.Err }

// Load reads and parses the file at path. An empty path means "no file":
// an empty configuration. The returned signature is taken from the same bytes
// that were parsed.
func Load(path string, lookup envvar.Lookup) (*Extensions, Signature, error) {
	if path == "" {
		return &Extensions{Raw: NewObject()}, Signature{}, nil
	}
	data, st, err := readStable(path)
	if err != nil {
		return nil, Signature{}, &LoadError{Path: path, Err: err}
	}
	ext, err := Parse(data, lookup)
	if err != nil {
		return nil, st, &LoadError{Path: path, Err: err}
	}
	ext.Dir = filepath.Dir(path)
	return ext, st, nil
}

// readStable reads the file and returns its content with the signature of
// exactly that content.
func readStable(path string) ([]byte, Signature, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Signature{}, fmt.Errorf("%w at %s", ErrExplicitMissing, path)
		}
		return nil, Signature{}, err
	}
	if st.IsDir() {
		return nil, Signature{}, fmt.Errorf("%s is a directory", path)
	}
	if st.Size() > MaxFileSize {
		return nil, Signature{}, fmt.Errorf("%w: %d bytes, above the limit of %d bytes (4 MiB)", ErrFileTooLarge, st.Size(), MaxFileSize)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, Signature{}, err
	}
	defer f.Close()
	// Read at most one byte past the limit: a file that grew since the
	// stat is refused the same way.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, Signature{}, err
	}
	if int64(len(data)) > MaxFileSize {
		return nil, Signature{}, fmt.Errorf("%w: above the limit of %d bytes (4 MiB)", ErrFileTooLarge, MaxFileSize)
	}
	sum := sha256.Sum256(data)
	return data, Signature{ModTime: st.ModTime().UnixNano(), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}
