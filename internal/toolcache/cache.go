// Package toolcache discovers the tools of every enabled MCP server and keeps
// them, with the live connections behind them, until the configuration's
// effective MCP slice changes. It is DeerFlow's mcp/cache.py: lazy on first
// use, a (path, mtime, size, sha256) check on every read, generation numbers
// so a reset or an edit during discovery discards that discovery, and
// last-known-good tools when the file is deleted or broken after a good load.
// The check on every read is one stat per file and no lock while the file's
// identity is unchanged (see Cache.ToolSet); the SHA-256 of the content
// still decides whenever a stat cannot prove the content unchanged.
// A ToolSet resolves a request's target (a tool's exposed name, a server)
// and hands it to internal/dispatch, which owns the path to the wire.
package toolcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/catalog"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/credential"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/oauth"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/sessionpool"
	"github.com/antler-mcp/antler/internal/tracing"
	"github.com/antler-mcp/antler/internal/upstream"
	"github.com/antler-mcp/antler/internal/virtualpath"
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("tool cache closed")

// errSuperseded marks a discovery discarded by a reset or a config edit.
var errSuperseded = errors.New("tool discovery was superseded by a reset or a config change")

// maxAttempts bounds how often one read restarts a superseded discovery.
const maxAttempts = 5

// Options configure a Cache.
type Options struct {
	// ConfigPath is the --config flag (may be empty).
	ConfigPath string
	// Lookup resolves $VAR references and the path variables; nil is the process environment.
	Lookup envvar.Lookup
	Logger *slog.Logger
	// Version is sent upstream as the client version.
	Version string
	// HTTPClient makes token-endpoint requests (nil: a default client).
	HTTPClient *http.Client
	// PluginCacheDir keeps compiled Wasm plugins across restarts ("": memory).
	PluginCacheDir string
	// DataDir roots the thread workspaces stdio servers run in
	// (<data>/users/<user>/threads/<thread>/user-data/workspace); "" runs
	// them in the host's working directory or the configured cwd.
	DataDir string
	// MaxSessions and IdleTimeout bound the stdio session pool (zero: 256
	// sessions, 30 minutes).
	MaxSessions int
	IdleTimeout time.Duration
	// MaxSessionsPerUser caps one user's stdio sessions (zero: 16).
	MaxSessionsPerUser int
	// Pinned reports whether (server, user, thread) has an active durable
	// task: its stdio session is then never closed for room or idleness,
	// since the task would die with the process. nil pins nothing.
	Pinned func(server, user, thread string) bool
	// MaxResultBytes bounds one message from a server that sets no
	// max_result_bytes of its own (zero: upstream.DefaultMaxResultBytes).
	MaxResultBytes int64
	// SpecTasks is set when the durable task runtime runs: tools whose
	// servers run them as MCP tasks (2025-11-25) are then marked
	// (Tool.TaskSupport) and submitted as durable tasks. Without it they
	// stay plain tools.
	SpecTasks bool
	// OnDiscovered, when set, is called as each server's discovery ends
	// (connected and listed, or failed), from that server's goroutine:
	// several may run at once. The CLI shows progress with it.
	OnDiscovered func(Discovered)
	// Metrics, when set, counts the pool's stdio sessions.
	Metrics *metrics.Metrics
	// Audit, when set, records stdio launches and plugin loads.
	Audit *audit.Logger
	// Catalog, when set, pins each server's tools against the approved
	// tool catalog (its tool_catalog policy) at each discovery.
	Catalog *catalog.Catalog
	// Tracer, when set, traces every request the endpoints send
	// (dispatch.Options.Tracer) and is the doors' (ToolSet.Tracer); nil
	// is tracing off.
	Tracer *tracing.Tracer
}

// catalogTimeout bounds the tool catalog's store reads and writes of one
// discovery.
const catalogTimeout = 10 * time.Second

// Discovered is one server's discovery outcome, as it ends.
type Discovered struct {
	Server    string
	Transport string
	// Tools is the number of tools the server listed.
	Tools   int
	Elapsed time.Duration
	// Err is the failure, nil when the server connected.
	Err error
}

// Cache is safe for concurrent use.
type Cache struct {
	opts Options
	log  *slog.Logger

	dir string // working directory at New, for relative config names

	pluginsOnce sync.Once
	pluginHost  *plugins.Host
	pluginErr   error

	// pool keeps stdio sessions per (server, user:thread) across rebuilds:
	// only the sessions of a server whose settings changed are retired.
	pool *sessionpool.Pool[*upstream.Conn]
	// watcher finds the files stdio calls change, for every workspace the
	// pool's sessions run in.
	watcher *virtualpath.Watcher

	locator *config.Locator // finds the config file and stats it, once per read

	// state is the published tool set with the files it was checked
	// against, read by the hot path without a lock. It is replaced whole,
	// never changed in place: under mu, or by the one re-hash in flight
	// (compare-and-swap, so it never overwrites a newer state). nil when
	// nothing is published.
	state atomic.Pointer[state]

	// rehashing is held by the one read that re-hashes the file when only
	// the clock asks for it; rehasher is its buffer.
	rehashing atomic.Bool
	rehasher  config.Signer

	// now and beforeRehash are time.Now and nil outside tests.
	now          func() time.Time
	beforeRehash func()

	mu         sync.Mutex
	signer     config.Signer     // guarded by mu
	slices     map[string][]byte // stdio servers' settings in the published tool set
	generation uint64
	// served is set once a tool set has been published.
	served   bool
	inflight *discovery
	closed   bool

	listenMu  sync.Mutex
	listeners []func(dispatch.Notification)

	// hostTools are the tools the host serves itself (see ReserveHostTools).
	hostTools atomic.Pointer[[]Tool]
}

// OnNotification adds fn to the receivers of every server's unsolicited
// notifications (resources/updated, list_changed), from any connection of
// this or a later tool set. fn runs on the connection's reader and must not
// block.
func (c *Cache) OnNotification(fn func(dispatch.Notification)) {
	c.listenMu.Lock()
	defer c.listenMu.Unlock()
	c.listeners = append(c.listeners, fn)
}

// notify hands n to every receiver.
func (c *Cache) notify(n dispatch.Notification) {
	c.listenMu.Lock()
	ls := c.listeners
	c.listenMu.Unlock()
	for _, fn := range ls {
		fn(n)
	}
}

// state is what one published tool set was built from and last checked
// against. seen is the config file as last read and decided on (adopted, or
// reported broken): while one stat shows the same file, the decision holds.
type state struct {
	snap    *ToolSet
	path    string           // config path the tool set was built from ("" = none)
	sig     config.Signature // signature adopted for that path
	digest  [32]byte         // MCP slice the tool set serves
	badSig  config.Signature // a broken revision already reported
	seen    config.Revision  // zero: unknown, the next read re-reads
	plugins []pluginFile     // plugin files the tool set loaded; never changed in place
}

// broken reports whether the revision last seen is the broken one reported.
func (st *state) broken() bool {
	return st.badSig != (config.Signature{}) && st.seen.Sig == st.badSig
}

// pluginFile is a loaded plugin's file as it was when loaded: a changed
// identity triggers a re-hash, and a changed hash a rebuild.
type pluginFile struct {
	path string
	// stat is the file's identity (device, inode, size, mtime, ctime) when
	// its hash was last checked; zero when unknown (the next read
	// re-hashes). Size and mtime alone miss a file renamed over it, or
	// rewritten, with the old mtime set back.
	stat   config.FileStat
	sha256 string
}

type discovery struct {
	generation uint64
	done       chan struct{}
	snap       *ToolSet
	err        error
}

// New returns a cache; nothing is discovered until the first read.
func New(opts Options) *Cache {
	if opts.Lookup == nil {
		opts.Lookup = envvar.OS
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, _ := os.Getwd()
	return &Cache{opts: opts, log: log, dir: dir,
		locator: config.NewLocator(opts.ConfigPath, opts.Lookup, dir),
		signer:  config.ConfigSigner(), rehasher: config.ConfigSigner(), now: time.Now,
		watcher: virtualpath.NewWatcher(),
		pool: sessionpool.New[*upstream.Conn](sessionpool.Options{
			MaxSessions: opts.MaxSessions, MaxPerUser: opts.MaxSessionsPerUser, IdleTimeout: opts.IdleTimeout, Pinned: opts.Pinned,
			OnEvent: func(server string, ev sessionpool.Event) { opts.Metrics.Session(server, string(ev)) }})}
}

// ToolSet returns the current tools, discovering them on first use or after
// the effective configuration changed. It is the hot path: a missing or broken
// file is not an error once something has been served.
//
// It takes no lock while nothing may have changed: one stat of the config
// file (and of each plugin file) that shows the identity (device, inode,
// size, mtime, ctime) of the revision last read returns the published
// tool set. A changed identity is a possible edit: the call waits for the one
// goroutine that re-reads the file (and reloads or rebuilds when the content
// differs). An unchanged identity whose hash is only due again (read over
// 1 s ago, or within 2 s of the file's last change) is re-hashed by one call
// while the others keep the current tool set; a different hash then rebuilds
// as an edit does. DeerFlow's rule holds: the SHA-256 of the content decides,
// and a new signature with the same MCP slice keeps tools and connections.
func (c *Cache) ToolSet(ctx context.Context) (*ToolSet, error) {
	return c.get(ctx, false)
}

// Load is the explicit, loud read used at start-up and by `antler tools`: a
// config file named by the flag or an environment variable that does not
// exist, or that does not parse, is an error.
func (c *Cache) Load(ctx context.Context) (*ToolSet, error) {
	if _, err := config.ResolvePath(c.opts.ConfigPath, c.opts.Lookup); err != nil {
		return nil, err
	}
	return c.get(ctx, true)
}

func (c *Cache) get(ctx context.Context, loud bool) (*ToolSet, error) {
	if s := c.fast(); s != nil {
		return s, nil
	}
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, ErrClosed
		}
		if st := c.state.Load(); st != nil {
			if !c.staleLocked(st) {
				c.mu.Unlock()
				return st.snap, nil
			}
			c.log.Info("MCP configuration changed; rebuilding tools", "path", st.path)
			c.startLocked(c.retireLocked())
		} else if c.inflight == nil {
			c.startLocked(nil)
		}
		d := c.inflight
		c.mu.Unlock()

		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if d.err == nil {
			return d.snap, nil
		}
		if errors.Is(d.err, errSuperseded) && attempt < maxAttempts {
			continue
		}
		if loud {
			return nil, d.err
		}
		return nil, d.err
	}
}

// Reset retires the published tools and their connections (closed before any
// new discovery serves) and makes any discovery in flight unpublishable.
func (c *Cache) Reset() {
	c.mu.Lock()
	retired := c.retireLocked()
	c.slices = nil
	c.mu.Unlock()
	if retired != nil {
		retired.close()
	}
	c.pool.CloseAll()
}

// Rebuild retires the published tools like Reset but keeps the stdio
// sessions of every server whose launch settings are unchanged: the next
// discovery closes only the sessions of servers that changed or are gone, as
// a file edit does. The config API calls it after a write.
func (c *Cache) Rebuild() {
	c.mu.Lock()
	retired := c.retireLocked()
	c.mu.Unlock()
	if retired != nil {
		retired.close()
	}
}

// ReserveHostTools names the tools the host serves itself (the task
// runtime's list_background_tasks and cancel_background_task): they take
// their names before any server's, so an upstream tool exposed under one of
// them is a name collision like any other (reported in its server's
// conflicts, kept from the host tool's Server) and is neither listed nor
// called. The host tools are not in the tool set: the doors list and answer
// them. A change retires the published tools, as Rebuild does; the same
// names again change nothing.
func (c *Cache) ReserveHostTools(tools []Tool) {
	c.mu.Lock()
	if old := c.hostTools.Load(); old != nil && sameToolNames(*old, tools) || old == nil && len(tools) == 0 {
		c.mu.Unlock()
		return
	}
	tools = slices.Clone(tools)
	c.hostTools.Store(&tools)
	retired := c.retireLocked()
	c.mu.Unlock()
	if retired != nil {
		retired.close()
	}
}

func sameToolNames(a, b []Tool) bool {
	return slices.EqualFunc(a, b, func(x, y Tool) bool { return x.Name == y.Name && x.Server == y.Server })
}

// RetireThread closes thread's stdio sessions that no durable task pins
// (see sessionpool.Pool.RetireThread): the thread has ended.
func (c *Cache) RetireThread(thread string) { c.pool.RetireThread(thread) }

// Close retires everything; later reads fail with ErrClosed.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	retired := c.retireLocked()
	d := c.inflight
	c.mu.Unlock()
	if retired != nil {
		retired.close()
	}
	if d != nil {
		<-d.done // its result is discarded and closed by the discovery itself
	}
	c.pool.Close()
	if c.pluginHost != nil {
		_ = c.pluginHost.Close(context.Background())
	}
}

// loadPlugins loads the configuration's mcpInterceptors entries. A plugin
// that cannot be loaded fails the whole discovery: serving calls without an
// interceptor the operator configured (a policy, a redactor) would not be
// safe. DeerFlow "module:attr" entries are skipped with a warning.
func (c *Cache) loadPlugins(ext *config.Extensions) ([]*plugins.Plugin, []string, error) {
	var entries []plugins.Entry
	var warnings []string
	for _, spec := range ext.InterceptorSpecs {
		e, skip, warning, err := plugins.ParseEntry(spec.Path, spec.JSON, ext.Dir)
		if err != nil {
			return nil, nil, err
		}
		if skip {
			c.log.Warn("skipping MCP interceptor", "warning", warning)
			warnings = append(warnings, warning)
			continue
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, warnings, nil
	}
	c.pluginsOnce.Do(func() {
		c.pluginHost, c.pluginErr = plugins.NewHost(c.opts.PluginCacheDir, c.log)
		if c.pluginErr == nil && c.opts.Metrics != nil {
			c.pluginHost.Observe(c.opts.Metrics.PluginCall)
		}
	})
	if c.pluginErr != nil {
		return nil, nil, c.pluginErr
	}
	var loaded []*plugins.Plugin
	for _, e := range entries {
		p, err := c.pluginHost.Load(context.Background(), e)
		if err != nil {
			for _, q := range loaded {
				q.Close()
			}
			return nil, nil, err
		}
		c.log.Info("Loaded MCP interceptor", "plugin", e.Name, "kind", e.Kind, "sha256", p.SHA256[:12])
		c.opts.Audit.PluginLoad(e.Name, "interceptor", e.Kind, e.Path, p.SHA256)
		loaded = append(loaded, p)
	}
	return loaded, warnings, nil
}

func pluginInterceptors(loaded []*plugins.Plugin) []interceptor.Interceptor {
	out := make([]interceptor.Interceptor, len(loaded))
	for i, p := range loaded {
		out[i] = interceptor.FromPlugin(p)
	}
	return out
}

// ConfigPath resolves the configuration file as discovery does ("" when
// there is none); an explicitly named file that is missing is an error.
func (c *Cache) ConfigPath() (string, error) {
	return config.ResolvePath(c.opts.ConfigPath, c.opts.Lookup)
}

// Generation is the number of resets and rebuilds so far.
func (c *Cache) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

func (c *Cache) retireLocked() *ToolSet {
	c.generation++
	st := c.state.Swap(nil)
	if st == nil {
		return nil
	}
	return st.snap
}

// startLocked launches a discovery for the current generation. It runs on its
// own context, not a caller's, so one client hanging up does not fail the
// others waiting on it; each server is bounded by its session_init_timeout.
func (c *Cache) startLocked(retired *ToolSet) {
	d := &discovery{generation: c.generation, done: make(chan struct{})}
	c.inflight = d
	// A discovery after tools were once served is a reload (a changed
	// file, a config API edit, a reset), counted by the metrics.
	reload := c.served
	go func() {
		defer close(d.done)
		if retired != nil {
			retired.close() // old connections go before new ones serve
		}
		snap, path, sig, digest, seen, err := c.discover()
		var files []pluginFile
		if err == nil {
			files = pluginFilesOf(snap.plugins) // hashes: outside the lock
		}
		c.mu.Lock()
		if c.inflight == d {
			c.inflight = nil
		}
		if err == nil && (c.generation != d.generation || c.closed) {
			err = errSuperseded
		}
		if err != nil {
			c.mu.Unlock()
			if snap != nil {
				snap.close()
			}
			if reload && !errors.Is(err, errSuperseded) {
				c.opts.Metrics.ConfigReload(metrics.ReloadRejected)
			}
			d.err = err
			return
		}
		if reload {
			c.opts.Metrics.ConfigReload(metrics.ReloadApplied)
		}
		c.served = true
		c.generation++
		snap.Generation = c.generation
		// Sessions of a stdio server whose settings changed (or that is gone)
		// are retired; the others keep their processes across the rebuild.
		var stale []string
		for name, old := range c.slices {
			if now, ok := snap.slices[name]; !ok || string(now) != string(old) {
				stale = append(stale, name)
			}
		}
		c.slices = snap.slices
		for _, name := range stale {
			c.pool.CloseServer(name) // before the new tool set serves
		}
		c.state.Store(&state{snap: snap, path: path, sig: sig, digest: digest, seen: seen, plugins: files})
		d.generation = c.generation
		c.mu.Unlock()
		d.snap = snap
	}()
}

// pluginFilesOf records the loaded plugins' files as they are now. A file
// that changed since it was loaded (discovery contacts servers after loading
// plugins, which takes a while) is recorded with an unknown size, so the next
// read re-hashes it and rebuilds, instead of taking the new file's mtime and
// size as the loaded plugin's and never noticing the change.
func pluginFilesOf(loaded []*plugins.Plugin) []pluginFile {
	files := make([]pluginFile, 0, len(loaded))
	for _, p := range loaded {
		pf := pluginFile{path: p.Entry.Path, sha256: p.SHA256}
		pf.stat = hashedStat(pf.path, p.SHA256)
		files = append(files, pf)
	}
	return files
}

// hashedStat is path's identity when the file, unchanged across its hash,
// has the content sha256; zero otherwise.
func hashedStat(path, sha256 string) config.FileStat {
	before := config.StatFile(path)
	if sig, ok := config.Fingerprint(path); !ok || sig.SHA256 != sha256 || config.StatFile(path) != before {
		return config.FileStat{}
	}
	return before
}

// discover loads the configuration once, connects to every enabled server
// concurrently and assembles the tool set. It re-checks the file afterwards:
// if the MCP slice changed while servers were being contacted, the result is
// discarded rather than published under the new file's signature. seen is
// that re-check's read when it shows the adopted signature (zero otherwise:
// the first read after publishing re-reads).
func (c *Cache) discover() (snap *ToolSet, path string, sig config.Signature, digest [32]byte, seen config.Revision, err error) {
	fail := func(err error) (*ToolSet, string, config.Signature, [32]byte, config.Revision, error) {
		return nil, "", config.Signature{}, [32]byte{}, config.Revision{}, err
	}
	path, err = config.ResolvePath(c.opts.ConfigPath, c.opts.Lookup)
	if err != nil {
		if !errors.Is(err, config.ErrExplicitMissing) {
			return fail(err)
		}
		path = "" // quiet: a vanished explicit file counts as unconfigured
	}
	ext, sig, err := config.Load(path, c.opts.Lookup)
	if err != nil {
		return fail(err)
	}
	for _, w := range ext.Warnings {
		c.log.Warn("extensions config", "warning", w)
	}
	digest = ext.MCPDigest()
	loaded, warnings, err := c.loadPlugins(ext)
	if err != nil {
		return fail(err)
	}
	var reserved []Tool
	if p := c.hostTools.Load(); p != nil {
		reserved = *p
	}
	snap = build(ext, c.opts, reserved, c.log, loaded, c.pool, c.watcher, c.notify)
	snap.ConfigPath = path
	snap.TaskDrivers = ext.TaskDrivers()
	snap.Warnings = append(append([]string(nil), snap.Warnings...), warnings...)

	if path != "" {
		signer := config.ConfigSigner()
		if now, ok := signer.Read(path); ok && now.Sig != sig {
			next, nsig, err := config.Load(path, c.opts.Lookup)
			if err == nil && next.MCPDigest() != digest {
				snap.close()
				return fail(errSuperseded)
			}
			if err == nil {
				sig = nsig
			}
			if now.Sig == sig {
				seen = now
			}
		} else if ok {
			seen = now
		}
	}
	return snap, path, sig, digest, seen, nil
}

// fast is the lock-free read: the published tool set when one stat per file
// shows nothing that needs a decision, or nil for the locked path. When only
// a re-hash is due, one caller re-hashes (outside every lock) and the others
// return the current tool set meanwhile.
func (c *Cache) fast() *ToolSet {
	st := c.state.Load()
	if st == nil {
		return nil
	}
	switch c.look(st) {
	case config.Fresh:
		return st.snap
	case config.Recheck:
		if !c.rehashing.CompareAndSwap(false, true) {
			return st.snap // another call is re-hashing; nothing visible changed
		}
		defer c.rehashing.Store(false)
		if c.beforeRehash != nil {
			c.beforeRehash()
		}
		rev, ok := c.rehasher.Read(st.seen.Path)
		if !ok || rev.Sig != st.seen.Sig {
			return nil // gone or other content: the locked path decides
		}
		next := *st
		next.seen = rev
		c.state.CompareAndSwap(st, &next) // lost to a newer state: that one is as good
		return st.snap
	}
	return nil
}

// look decides from one stat of the config file and of each plugin file
// whether st may be stale, as staleLocked would: Fresh, Recheck (only a
// re-hash is due) or Changed (something staleLocked must look at).
func (c *Cache) look(st *state) config.Freshness {
	path, fst := c.locator.Find()
	if st.path == "" {
		if fst.Exists() {
			return config.Changed // a file has appeared
		}
		return config.Fresh
	}
	if !fst.Exists() {
		return config.Fresh // deleted: keep last-known-good
	}
	if path != st.seen.Path {
		return config.Changed
	}
	v := st.seen.Check(fst, c.now())
	if v == config.Changed || st.broken() {
		return v // a broken revision keeps everything, plugins included
	}
	for _, pf := range st.plugins {
		if ps := config.StatFile(pf.path); ps.Exists() && ps != pf.stat {
			return config.Changed
		}
	}
	return v
}

// staleLocked decides whether the published tool set st must be rebuilt,
// for a read the lock-free check could not answer (the callers queued on mu
// wait for its outcome and then find it published). A changed signature is
// only a signal: the file is re-read and the tool set is retired only if the
// effective MCP slice differs. Otherwise the new signature is adopted and
// tools and connections are kept. What it decides is published with the
// revision it read, so that the next reads answer from a stat.
func (c *Cache) staleLocked(st *state) bool {
	path, fst := c.locator.Find()
	if st.path == "" {
		return fst.Exists() // built without a file; one has appeared
	}
	if !fst.Exists() {
		return false // deleted (or a vanished explicit file): keep last-known-good
	}
	next := *st
	unchanged := path == st.seen.Path && st.seen.Check(fst, c.now()) == config.Fresh
	if unchanged && st.broken() {
		return false // the broken revision already reported is still the file
	}
	if !unchanged {
		rev, ok := c.signer.Read(path)
		switch {
		case !ok:
			return false // gone since the stat: keep last-known-good
		case path == st.path && rev.Sig == st.sig && rev.Sig.Verifiable():
			next.seen = rev
		case rev.Sig == st.badSig:
			next.seen = rev // already reported; wait for the next edit
			c.state.Store(&next)
			return false
		default:
			ext, lsig, err := config.Load(path, c.opts.Lookup)
			if err != nil {
				// Keep last-known-good and report once per broken revision.
				// The message names the file and fields only.
				next.badSig, next.seen = rev.Sig, rev
				c.state.Store(&next)
				c.log.Warn("extensions config changed but cannot be loaded; still serving the last good tools", "error", err.Error())
				c.opts.Metrics.ConfigReload(metrics.ReloadRejected)
				return false
			}
			if ext.MCPDigest() != st.digest {
				return true
			}
			next.path, next.sig, next.badSig, next.seen = path, lsig, config.Signature{}, config.Revision{}
			if lsig == rev.Sig {
				next.seen = rev
			}
		}
	}
	if c.pluginsChangedLocked(&next) {
		return true
	}
	c.state.Store(&next)
	return false
}

// pluginsChangedLocked reports whether a loaded plugin's file now has other
// content. Only a changed identity costs a hash, so the hot path stays a
// stat per plugin; a file whose content is the same gets its new identity
// in a copy of st.plugins. A vanished file keeps the loaded plugin.
func (c *Cache) pluginsChangedLocked(st *state) bool {
	var files []pluginFile // copy on first change: the published slice is shared
	for i, pf := range st.plugins {
		fst := config.StatFile(pf.path)
		if !fst.Exists() || fst == pf.stat {
			continue
		}
		sig, ok := config.Fingerprint(pf.path)
		if !ok {
			continue
		}
		if sig.SHA256 != pf.sha256 {
			c.log.Info("MCP interceptor plugin changed; rebuilding tools", "path", pf.path)
			return true
		}
		if files == nil {
			files = append([]pluginFile(nil), st.plugins...)
		}
		files[i].stat = hashedStat(pf.path, pf.sha256)
	}
	if files != nil {
		st.plugins = files
	}
	return false
}

// build connects to every enabled server concurrently and assembles the
// tool set in configuration order.
func build(ext *config.Extensions, opts Options, reserved []Tool, log *slog.Logger, loaded []*plugins.Plugin, pool *sessionpool.Pool[*upstream.Conn], watcher *virtualpath.Watcher, notify func(dispatch.Notification)) *ToolSet {
	servers := ext.Enabled()
	tokens := oauth.New(ext, oauth.Options{Client: opts.HTTPClient, Logger: log, OnFetch: opts.Metrics.OAuthFetch})
	// uoptsFor gives each server its base headers: static, plus the cached
	// OAuth header (discovery fetches the first one; calls refresh it).
	uoptsFor := func(srv *config.Server) upstream.Options {
		o := upstream.Options{Logger: log, Version: opts.Version, MaxResultBytes: opts.MaxResultBytes}
		// The connection discovery opens (an HTTP or SSE server's shared
		// one) reports like those the endpoint dials later.
		o.OnNotification = func(method string, params json.RawMessage) {
			notify(dispatch.Notification{Server: srv.Name, Method: method, Params: params})
		}
		if !srv.IsStdio() && tokens.Has(srv.Name) {
			o.BaseHeaders = func() map[string]string {
				h := srv.Headers.Map()
				if auth := tokens.Cached(srv.Name); auth != "" {
					h = header.Apply(h, []header.Override{{Name: "Authorization", Value: auth}}, header.Spellings(keys(srv.Headers)))
				}
				return h
			}
		}
		return o
	}
	type result struct {
		conn     *upstream.Conn
		protocol string
		tools    []upstream.Tool
		// tasks: the server declared tasks.requests.tools.call.
		tasks bool
		// taskExt: the server speaks 2026-07-28 and declared the tasks
		// extension (it decides per call whether to answer with a task).
		taskExt bool
		err     error
	}
	results := make([]result, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		if srv.Problem != nil {
			results[i].err = srv.Problem
			continue
		}
		wg.Go(func() {
			ctx, cancel := withTimeout(context.Background(), srv.SessionInitTimeout)
			defer cancel()
			if report := opts.OnDiscovered; report != nil {
				start := time.Now()
				defer func() {
					report(Discovered{Server: srv.Name, Transport: srv.Type, Tools: len(results[i].tools), Elapsed: time.Since(start), Err: results[i].err})
				}()
			}
			if !srv.IsStdio() && tokens.Has(srv.Name) {
				// Fail-soft: without a token the server is still tried.
				if _, err := tokens.Header(ctx, srv.Name); err != nil {
					log.Warn("Skipping initial OAuth header for MCP server after token fetch failed", "server", srv.Name, "error", err.Error())
				}
			}
			conn, err := upstream.Dial(ctx, srv, uoptsFor(srv))
			if err != nil {
				results[i].err = err
				return
			}
			tools, err := conn.ListTools(ctx)
			if err != nil {
				conn.Close()
				results[i].err = err
				return
			}
			results[i] = result{conn: conn, tools: tools, tasks: conn.ServesToolTasks(), taskExt: conn.ServesTaskExtension()}
			if srv.IsStdio() {
				// Discovery only lists: calls get a session of their own
				// thread from the pool.
				results[i].protocol = conn.ProtocolVersion()
				conn.Close()
				results[i].conn = nil
			}
		})
	}
	wg.Wait()
	pinned := make([]catalog.Verdict, len(servers))
	if opts.Catalog != nil {
		ctx, cancel := context.WithTimeout(context.Background(), catalogTimeout)
		for i, srv := range servers {
			if results[i].err != nil {
				continue
			}
			v, err := opts.Catalog.Pin(ctx, srv.Name, srv.CatalogPolicy(), results[i].tools)
			if err != nil {
				log.Error("MCP tool catalog check failed", "server", srv.Name, "error", err.Error())
			}
			pinned[i], results[i].tools = v, v.Served
		}
		cancel()
	}

	snap := &ToolSet{
		DiscoveredAt: time.Now(),
		Warnings:     ext.Warnings,
		TaskFreeze:   ext.TaskFreeze(),
		byName:       map[string]int{},
		endpoints:    map[string]*dispatch.Endpoint{},
		chain:        credential.Chain(ext, tokens, pluginInterceptors(loaded), log),
		background:   credential.BackgroundChain(ext, tokens, pluginInterceptors(loaded), log),
		credentials:  credential.Layers(ext, tokens, log),
		plugins:      loaded,
		pool:         pool,
		slices:       map[string][]byte{},
		log:          log,
		tracer:       opts.Tracer,
	}
	owner := map[string]string{} // exposed name → server
	for _, t := range reserved {
		owner[t.Name] = t.Server
	}
	for i, srv := range servers {
		st := ServerStatus{Name: srv.Name, Transport: srv.Type, CatalogDrifted: pinned[i].Drifted, CatalogHeld: pinned[i].Held}
		r := results[i]
		if r.err != nil {
			st.State = StateFailed
			st.Error, st.PublicError = discoveryReason(srv, r.err)
			log.Warn("skipping MCP server after tool discovery failed", "server", srv.Name, "error", st.Error)
			snap.Servers = append(snap.Servers, st)
			continue
		}
		st.State = StateConnected
		eopts := dispatch.Options{Upstream: uoptsFor(srv), Logger: log, Conn: r.conn, OnNotification: notify}
		if r.tasks && opts.SpecTasks && srv.SpecTasksEnabled() && srv.Type == config.TransportHTTP {
			// Its durable tasks live in the session: a restart must not
			// end it (the connection's Close would DELETE it).
			eopts.Upstream.KeepSession = true
			r.conn.KeepSession()
		}
		if srv.IsStdio() {
			st.ProtocolVersion = r.protocol
			sum := sha256.Sum256(srv.Slice())
			eopts.Pool, eopts.DataDir, eopts.Version, eopts.Watcher = pool, opts.DataDir, hex.EncodeToString(sum[:8]), watcher
			snap.slices[srv.Name] = srv.Slice()
		} else {
			st.ProtocolVersion = r.conn.ProtocolVersion()
		}
		eopts.Audit, eopts.Metrics, eopts.Tracer = opts.Audit, opts.Metrics, opts.Tracer
		ep := dispatch.NewEndpoint(srv, eopts)
		snap.endpoints[srv.Name] = ep
		roles, missing := taskRoles(srv, r.tools)
		if len(missing) > 0 {
			st.State = StateFailed
			st.Error = fmt.Sprintf("MCP server '%s' task_toolsets reference missing raw tool(s): %s", srv.Name, strings.Join(missing, ", "))
			st.PublicError = st.Error
			log.Warn("MCP server misconfigured", "server", srv.Name, "error", st.Error)
			ep.Close()
			delete(snap.endpoints, srv.Name)
			snap.Servers = append(snap.Servers, st)
			continue
		}
		for _, ut := range r.tools {
			role, bound := roles[ut.Name]
			if bound && role.role != "submit" {
				continue // status and cancel tools are the runtime's, not the agent's
			}
			name := srv.ExposedName(ut.Name)
			if !validToolName.MatchString(name) {
				st.InvalidNames++
				log.Warn("dropping MCP tool with an invalid name", "server", srv.Name)
				continue
			}
			if winner, taken := owner[name]; taken {
				st.Conflicts = append(st.Conflicts, Conflict{Tool: ut.Name, Name: name, KeptFrom: winner})
				log.Warn("MCP tool name collision; keeping the first in config order", "name", name, "server", srv.Name, "kept_from", winner)
				continue
			}
			owner[name] = srv.Name
			t := Tool{
				Name:         name,
				Server:       srv.Name,
				OriginalName: ut.Name,
				Description:  ut.Description,
				InputSchema:  ut.InputSchema,
				OutputSchema: ut.OutputSchema,
			}
			if len(t.InputSchema) == 0 {
				t.InputSchema = []byte(`{"type":"object"}`)
			}
			if r := srv.EffectiveRouting(ut.Name); r.Mode != config.RoutingOff {
				t.Routing = &r
			}
			specTasks := !bound && opts.SpecTasks && srv.SpecTasksEnabled()
			if specTasks && r.taskExt {
				// 2026-07-28: the server decides per call, so every call is a
				// durable task, one answered inline completes at once.
				t.TaskExtension = true
			}
			if specTasks && !r.taskExt && r.tasks && ut.TaskSupport() != "forbidden" {
				t.TaskSupport, t.TaskTTL = ut.TaskSupport(), srv.SpecTaskTTL
			}
			if t.TaskSupport != "" || t.TaskExtension {
				t.ServerDriver = len(srv.Driver) > 0
				contract := "Runs as a durable background task; returns an Antler task ID immediately and status polling is handled automatically."
				if t.Description == "" {
					t.Description = contract
				} else {
					t.Description += "\n\n" + contract
				}
			}
			if bound {
				ts := role.toolset
				t.TaskToolset = &ts
				contract := fmt.Sprintf("Submitted as durable background task '%s'; returns an Antler task ID immediately and status polling is handled automatically.", ts.Name)
				if t.Description == "" {
					t.Description = contract
				} else {
					t.Description += "\n\n" + contract
				}
			}
			snap.byName[name] = len(snap.Tools)
			snap.Tools = append(snap.Tools, t)
			st.Tools++
		}
		snap.Servers = append(snap.Servers, st)
	}
	return snap
}

type taskRole struct {
	toolset config.TaskToolset
	role    string // submit, status, cancel or respond
}

// taskRoles maps a server's raw tool names to their task_toolsets roles and
// lists the referenced names the server does not have.
func taskRoles(srv *config.Server, tools []upstream.Tool) (map[string]taskRole, []string) {
	have := map[string]bool{}
	for _, t := range tools {
		have[t.Name] = true
	}
	roles := map[string]taskRole{}
	var missing []string
	for _, ts := range srv.TaskToolsets {
		for role, name := range map[string]string{"submit": ts.SubmitTool, "status": ts.StatusTool, "cancel": ts.CancelTool, "respond": ts.RespondTool} {
			if name == "" { // respond_tool is optional
				continue
			}
			roles[name] = taskRole{toolset: ts, role: role}
			if !have[name] {
				missing = append(missing, name)
			}
		}
	}
	sort.Strings(missing)
	return roles, missing
}

func keys(p config.Pairs) []string {
	out := make([]string, len(p))
	for i, e := range p {
		out[i] = e.Key
	}
	return out
}

// discoveryReason turns a discovery failure into a message without secrets,
// for admins, and a coarser one for everyone else: a process's or a
// connection's error names host paths, binaries and internal URLs.
func discoveryReason(srv *config.Server, err error) (detail, public string) {
	var fe *config.FieldError
	switch {
	case errors.As(err, &fe):
		return fe.Error(), fe.Error()
	case errors.Is(err, context.DeadlineExceeded):
		msg := fmt.Sprintf("tool discovery timed out after %s", srv.SessionInitTimeout)
		return msg, msg
	}
	detail = truncate(dispatch.Redact(err.Error()), 500)
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return detail, "the server's process could not be started"
	case errors.Is(err, syscall.ECONNREFUSED):
		return detail, "the server refused the connection"
	}
	return detail, "tool discovery failed"
}

// withTimeout bounds ctx by d; zero means no bound.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
