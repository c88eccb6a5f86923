package mcpserver

// The door aggregates more than tools: every upstream's resources, resource
// templates and prompts, completion/complete, logging/setLevel and
// resources/subscribe. A stdio server's lists belong to the caller's own
// session, so nothing is registered globally: each list is made at request
// time for the caller (concurrently across servers, a failing server skipped
// with a warning) and served in pages of the door's own.
//
// mcp-go carries the protocol on every transport (streamable HTTP with
// sessions, the stateless 2026-07-28 protocol, legacy SSE), so these
// methods are served through its dispatch: a before hook lists or routes
// for the caller, the after hook replaces mcp-go's answer from its
// (empty) global registry with the caller's page, and a catch-all resource
// template and prompt carry reads and gets to the routed server. What a
// before hook decided travels to the handler inside the request it hands
// on, as a Go value no JSON can forge.

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/keylock"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/upstream"
)

// DefaultListPageSize is the page size of resources/list,
// resources/templates/list and prompts/list when Options.ListPageSize is 0.
const DefaultListPageSize = 100

// RewrittenScheme starts a resource URI or URI template that two servers
// both list: the first in configuration order keeps it as is, a later one's
// is exposed as RewrittenScheme + server + "/" + the original, which routes
// a read back to that server.
const RewrittenScheme = "antler://"

// maxUpstreamPages bounds the pages followed in one upstream's list.
const maxUpstreamPages = 64

// maxListingBytes bounds the bytes of the listings remembered for paging
// and routing (least recently used first out); a single larger listing is
// kept alone while it is the newest.
const maxListingBytes = 32 << 20

// maxListings bounds the listings remembered whatever their size.
const maxListings = 1024

// One user's share of the remembered listings, a sixteenth of their number
// and an eighth of their bytes: listing again and again, one user evicted
// every other user's, whose cursors then failed and whose reads listed
// every server again. A user past either share loses their own least
// recently used.
const (
	maxListingsPerUser = maxListings / 16
	userByteShare      = 8
)

// listChangedInterval is the least time between two fan-outs of one
// list_changed method to one audience: an upstream's storm reaches each
// session once per interval (the trailing edge), not once per message.
const listChangedInterval = time.Second

// catchAll names the global resource template and prompt that carry every
// routed read and get to its server; the after hooks keep them out of the
// lists.
const (
	catchAllTemplate = "{+uri}"
	catchAllPrompt   = "antler/routed-prompt"
	// routeKey is the _meta key under which a before hook hands its route
	// to the catch-all handler.
	routeKey = "antler/route"
)

// listKind is one of the aggregated lists.
type listKind struct {
	method     string
	field      string // the result's array
	key        string // an item's identifying field
	capability string // the server capability that offers it
}

var (
	resourcesKind = listKind{string(mcp.MethodResourcesList), "resources", "uri", "resources"}
	templatesKind = listKind{string(mcp.MethodResourcesTemplatesList), "resourceTemplates", "uriTemplate", "resources"}
	promptsKind   = listKind{string(mcp.MethodPromptsList), "prompts", "name", "prompts"}
)

// route is where an exposed URI, template or prompt name goes: the server
// and the server's own name for it.
type route struct {
	server string
	name   string
}

// template is a listed URI template, compiled, for matching a read.
type template struct {
	match *mcp.URITemplate
	route route
}

// listing is one caller's aggregate of one kind, in configuration order.
// A cursor names it by id, so every page of one walk comes from the one
// upstream listing, whatever order the upstreams would list in next.
type listing struct {
	id        string
	key       listingKey
	items     []json.RawMessage // as exposed (a collision's key rewritten)
	routes    map[string]route  // exposed key → route
	templates []template        // templatesKind only
	servers   map[string]bool   // the servers listed
	size      int               // bytes held, roughly
}

// aggregate is the door's state for everything but tools.
type aggregate struct {
	pageSize int
	maxBytes int // maxListingBytes but in tests

	// pending holds a list's page between its before and after hooks,
	// keyed by the request mcp-go hands both.
	pending sync.Map
	// parked holds completion routes by token until the provider runs.
	parked sync.Map

	mu      sync.Mutex
	lru     *list.List                   // of *listing, most recent first
	byID    map[string]*list.Element     // listing id → its element
	current map[listingKey]*list.Element // a caller's last listing of a kind
	bytes   int
	// ofUser counts each user's remembered listings and their bytes.
	ofUser   map[string]userListings
	coalesce map[changeKey]*pendingChange

	subMu sync.Mutex
	// subs are the downstream sessions subscribed to an upstream resource:
	// session id → the subscription.
	subs map[subKey]map[string]subscriber
	// subscribes counts each session's subscribes on their way upstream,
	// and gone marks those of them whose session ended meanwhile (both
	// empty when none is on its way).
	subscribes map[string]int
	gone       map[string]bool
	// perUser counts the sessions' subscriptions in subs by their user;
	// admitted counts the subscribes admitRequest let through that
	// have not ended yet.
	perUser, admitted map[string]int
	// subSend serializes the subscription changes forwarded upstream, one
	// upstream resource at a time (a slow server delays only its own).
	subSend keylock.Table[subKey]
}

// subscriber is one session's subscription: the URI as that session knows
// it, and whose it is (what a later unsubscribe on its behalf acts as).
type subscriber struct {
	exposed, user, thread string
}

// subKey is one upstream resource on one connection: a stdio server's
// session of user and thread, or ("", "") for a shared connection.
type subKey struct {
	server, user, thread, uri string
}

// listingKey is whose listing it is. An HTTP or SSE server's connection is
// shared, so what it lists depends on the user alone (user_auth may show
// users different lists): thread is set only when a connected stdio
// server, whose session is the thread's, takes part. A client picks its
// thread ids freely, so a key per thread would be a cache per guess.
type listingKey struct {
	snap         *toolcache.ToolSet
	user, thread string
	kind         string
}

// changeKey is one coalesced list_changed fan-out: a method to everyone
// (user "") or to one user's sessions (a stdio server's change).
type changeKey struct {
	method, user string
}

// pendingChange is a fan-out waiting for its interval to end, with the
// listings it invalidates.
type pendingChange struct {
	servers map[changeSource]bool
}

// changeSource is the server (and, for stdio, the session) a list_changed
// came from.
type changeSource struct {
	server, user, thread string
}

func newAggregate(pageSize int) *aggregate {
	if pageSize <= 0 {
		pageSize = DefaultListPageSize
	}
	return &aggregate{
		pageSize:   pageSize,
		maxBytes:   maxListingBytes,
		lru:        list.New(),
		byID:       map[string]*list.Element{},
		current:    map[listingKey]*list.Element{},
		ofUser:     map[string]userListings{},
		coalesce:   map[changeKey]*pendingChange{},
		subs:       map[subKey]map[string]subscriber{},
		subscribes: map[string]int{},
		gone:       map[string]bool{},
		perUser:    map[string]int{},
		admitted:   map[string]int{},
	}
}

// remember keeps l as its caller's last listing of its kind and as the
// listing its cursors name, evicting the least recently used past the
// bounds.
func (a *aggregate) remember(l *listing) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	l.id = hex.EncodeToString(b[:])
	a.mu.Lock()
	defer a.mu.Unlock()
	// The caller's previous listing stays for its cursors until evicted.
	e := a.lru.PushFront(l)
	a.byID[l.id] = e
	a.current[l.key] = e
	a.bytes += l.size
	u := a.ofUser[l.key.user]
	u.n, u.bytes = u.n+1, u.bytes+l.size
	a.ofUser[l.key.user] = u
	// The user's own first, then anyone's: past the user's share only the
	// user's listings go.
	for o := a.lru.Back(); o != e && (u.n > maxListingsPerUser || u.bytes > a.maxBytes/userByteShare); {
		prev := o.Prev()
		if o.Value.(*listing).key.user == l.key.user {
			a.drop(o)
			u = a.ofUser[l.key.user]
		}
		o = prev
	}
	for (a.bytes > a.maxBytes || a.lru.Len() > maxListings) && a.lru.Back() != e {
		a.drop(a.lru.Back())
	}
}

// userListings is what one user's remembered listings hold.
type userListings struct{ n, bytes int }

// drop removes one remembered listing; a.mu is held.
func (a *aggregate) drop(e *list.Element) {
	l := e.Value.(*listing)
	a.lru.Remove(e)
	delete(a.byID, l.id)
	if a.current[l.key] == e {
		delete(a.current, l.key)
	}
	a.bytes -= l.size
	if u := a.ofUser[l.key.user]; u.n <= 1 {
		delete(a.ofUser, l.key.user)
	} else {
		a.ofUser[l.key.user] = userListings{u.n - 1, u.bytes - l.size}
	}
}

// recalled is k's last listing (nil: none remembered).
func (a *aggregate) recalled(k listingKey) *listing {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.current[k]
	if !ok {
		return nil
	}
	a.lru.MoveToFront(e)
	return e.Value.(*listing)
}

// named is the listing a cursor names (nil: evicted or invalidated).
func (a *aggregate) named(id string) *listing {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.byID[id]
	if !ok {
		return nil
	}
	a.lru.MoveToFront(e)
	return e.Value.(*listing)
}

// invalidate drops every remembered listing of kinds that src took part
// in (a stdio source: only its own user's and thread's).
func (a *aggregate) invalidate(kinds []string, src changeSource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for e := a.lru.Front(); e != nil; {
		next := e.Next()
		l := e.Value.(*listing)
		if slices.Contains(kinds, l.key.kind) && l.servers[src.server] &&
			(src.user == "" || (l.key.user == src.user && l.key.thread == src.thread)) {
			a.drop(e)
		}
		e = next
	}
}

// remembered is the number and bytes of the listings remembered.
func (a *aggregate) remembered() (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lru.Len(), a.bytes
}

// lockSubscription takes k's turn to change its subscription upstream and
// returns its release (the wait has no end but the turn: each change is
// bounded by its request's timeout).
func (a *aggregate) lockSubscription(k subKey) (unlock func()) {
	unlock, _ = a.subSend.Lock(context.Background(), k)
	return unlock
}

// subscribe records (or, with on false, drops) session's subscription,
// and reports how many sessions are subscribed to k after it.
func (a *aggregate) subscribe(k subKey, session string, sub subscriber, on bool) int {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	if on {
		if a.subs[k] == nil {
			a.subs[k] = map[string]subscriber{}
		}
		if old, ok := a.subs[k][session]; ok {
			a.countLocked(old.user, -1)
		}
		a.subs[k][session] = sub
		a.countLocked(sub.user, 1)
		return len(a.subs[k])
	}
	if old, ok := a.subs[k][session]; ok {
		a.countLocked(old.user, -1)
	}
	delete(a.subs[k], session)
	if len(a.subs[k]) == 0 {
		delete(a.subs, k)
	}
	return len(a.subs[k])
}

// countLocked moves user's count of subscriptions by n.
func (a *aggregate) countLocked(user string, n int) {
	if a.perUser[user] += n; a.perUser[user] <= 0 {
		delete(a.perUser, user)
	}
}

// admitSubscribe takes a place for a subscribe of user among max, counted
// with the subscriptions user's sessions hold until subscribeEnded, or
// reports false and the number held: subscribes sent at once cannot all
// pass a bound that each checked alone.
func (a *aggregate) admitSubscribe(user string, max int) (int, bool) {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	if n := a.perUser[user] + a.admitted[user]; n >= max {
		return n, false
	}
	a.admitted[user]++
	return 0, true
}

// subscribeEnded gives back the place an admitted subscribe of user took
// (its subscription, if recorded, counts in perUser by then).
func (a *aggregate) subscribeEnded(user string) {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	if a.admitted[user]--; a.admitted[user] <= 0 {
		delete(a.admitted, user)
	}
}

// subscribing notes a subscribe of session on its way upstream, so that
// the session's end meanwhile is remembered until it returns.
func (a *aggregate) subscribing(session string) {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	a.subscribes[session]++
}

// subscribed ends a subscribe that subscribing noted: it records the
// subscription when the upstream took it (ok) and the session is still
// live. It reports whether the session is live, and how many sessions are
// subscribed to k after it.
func (a *aggregate) subscribed(k subKey, session string, sub subscriber, ok bool) (live bool, left int) {
	a.subMu.Lock()
	live = !a.gone[session]
	if a.subscribes[session]--; a.subscribes[session] <= 0 {
		delete(a.subscribes, session)
		delete(a.gone, session)
	}
	a.subMu.Unlock()
	return live, a.subscribe(k, session, sub, ok && live)
}

// orphan is a subscription upstream that no session holds any more, and
// whose it was.
type orphan struct {
	key subKey
	subscriber
}

// ended drops every subscription of a session that ended, and marks it
// gone for any subscribe of it still on its way. It returns the
// subscriptions it was the last holder of: they are to be ended upstream
// (on a shared HTTP or SSE connection, or the thread's stdio process if it
// still runs).
func (a *aggregate) ended(session string) []orphan {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	var orphans []orphan
	for k, sessions := range a.subs {
		sub, ok := sessions[session]
		if !ok {
			continue
		}
		a.countLocked(sub.user, -1)
		delete(sessions, session)
		if len(sessions) == 0 {
			delete(a.subs, k)
			orphans = append(orphans, orphan{k, sub})
		}
	}
	if a.subscribes[session] > 0 {
		a.gone[session] = true
	}
	return orphans
}

// holders is how many sessions are subscribed to k.
func (a *aggregate) holders(k subKey) int {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	return len(a.subs[k])
}

// subscribers are the sessions subscribed to k, with their URIs.
func (a *aggregate) subscribers(k subKey) map[string]string {
	a.subMu.Lock()
	defer a.subMu.Unlock()
	out := make(map[string]string, len(a.subs[k]))
	for id, sub := range a.subs[k] {
		out[id] = sub.exposed
	}
	return out
}

func (a *aggregate) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lru.Init()
	clear(a.byID)
	clear(a.current)
	a.bytes = 0
}

// aggregateHooks registers the hooks that serve the aggregated methods.
func (s *Server) aggregateHooks(h *server.Hooks) {
	h.AddBeforeListResources(func(ctx context.Context, _ any, r *mcp.ListResourcesRequest) {
		s.beforeList(ctx, resourcesKind, r, &r.Params)
	})
	h.AddAfterListResources(func(_ context.Context, _ any, r *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
		p := s.page(r)
		res.Resources, res.NextCursor = typed[mcp.Resource](s, p.items), p.next
	})
	h.AddBeforeListResourceTemplates(func(ctx context.Context, _ any, r *mcp.ListResourceTemplatesRequest) {
		s.beforeList(ctx, templatesKind, r, &r.Params)
	})
	h.AddAfterListResourceTemplates(func(_ context.Context, _ any, r *mcp.ListResourceTemplatesRequest, res *mcp.ListResourceTemplatesResult) {
		p := s.page(r)
		res.ResourceTemplates, res.NextCursor = typed[mcp.ResourceTemplate](s, p.items), p.next
	})
	h.AddBeforeListPrompts(func(ctx context.Context, _ any, r *mcp.ListPromptsRequest) {
		s.beforeList(ctx, promptsKind, r, &r.Params)
	})
	h.AddAfterListPrompts(func(_ context.Context, _ any, r *mcp.ListPromptsRequest, res *mcp.ListPromptsResult) {
		p := s.page(r)
		res.Prompts, res.NextCursor = typed[mcp.Prompt](s, p.items), p.next
	})
	h.AddOnError(func(_ context.Context, _ any, _ mcp.MCPMethod, message any, _ error) {
		// Only the list requests park a page; other messages (a blocked
		// notification's report is a map) may not even be hashable.
		switch message.(type) {
		case *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest, *mcp.ListPromptsRequest:
			s.agg.pending.Delete(message)
		}
	})
	h.AddBeforeReadResource(s.beforeRead)
	h.AddBeforeGetPrompt(s.beforeGetPrompt)
	h.AddBeforeComplete(s.beforeComplete)
	h.AddAfterSetLevel(func(ctx context.Context, _ any, r *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		params, _ := json.Marshal(r.Params)
		s.broadcast(ctx, string(mcp.MethodSetLogLevel), params, "logging", "")
	})
	h.AddAfterSubscribe(func(ctx context.Context, _ any, r *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		s.forwardSubscription(ctx, string(mcp.MethodResourcesSubscribe), r.Params.URI)
		s.subscribeEnded(ctx)
	})
	h.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodResourcesSubscribe {
			s.subscribeEnded(ctx)
		}
		s.requestEnded(ctx, method)
	})
	h.AddOnSuccess(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ any) {
		s.requestEnded(ctx, method)
	})
	h.AddAfterUnsubscribe(func(ctx context.Context, _ any, r *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		s.forwardSubscription(ctx, string(mcp.MethodResourcesUnsubscribe), r.Params.URI)
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.release(s.agg.ended(cs.SessionID())) })
}

// mountAggregate registers the catch-all template and prompt every routed
// read and get reaches.
func (s *Server) mountAggregate() {
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(catchAllTemplate, "antler"), s.readResource)
	s.mcp.AddPrompt(mcp.NewPrompt(catchAllPrompt), s.getPrompt)
	if s.cache != nil {
		s.cache.OnNotification(s.upstreamNotification)
	}
}

// upstreamNotification relays what a server says unasked:
// resources/updated to the sessions subscribed to that resource on that
// connection, a list_changed coalesced (listChanged). It runs on the upstream's reader: mcp-go's
// sends never block (a full session queue drops the notification), and an
// update caused by a call in flight reaches that call's stream before its
// result. After Close there is no session left to reach.
func (s *Server) upstreamNotification(n dispatch.Notification) {
	switch n.Method {
	case mcp.MethodNotificationResourceUpdated:
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(n.Params, &p) != nil || p.URI == "" {
			return
		}
		subs := s.agg.subscribers(subKey{n.Server, n.UserID, n.ThreadID, p.URI})
		if len(subs) == 0 {
			return
		}
		for session, uri := range subs {
			if err := s.mcp.SendNotificationToSpecificClient(session, n.Method, map[string]any{"uri": uri}); err != nil {
				s.log.Debug("MCP resource update not delivered", "error", err.Error())
			}
		}
	case mcp.MethodNotificationResourcesListChanged, mcp.MethodNotificationPromptsListChanged:
		s.listChanged(n)
	}
}

// listChanged coalesces an upstream's list_changed: the first of a method
// (to everyone, or for a stdio session to its user's sessions) starts an
// interval, later ones join it, and at its end the listings of the servers
// that changed are dropped and each session is told once.
func (s *Server) listChanged(n dispatch.Notification) {
	k := changeKey{method: n.Method, user: n.UserID}
	src := changeSource{server: n.Server, user: n.UserID, thread: n.ThreadID}
	s.agg.mu.Lock()
	defer s.agg.mu.Unlock()
	if p, ok := s.agg.coalesce[k]; ok {
		p.servers[src] = true
		return
	}
	s.agg.coalesce[k] = &pendingChange{servers: map[changeSource]bool{src: true}}
	time.AfterFunc(listChangedInterval, func() { s.fanOut(k) })
}

// fanOut ends k's interval.
func (s *Server) fanOut(k changeKey) {
	s.agg.mu.Lock()
	p := s.agg.coalesce[k]
	delete(s.agg.coalesce, k)
	s.agg.mu.Unlock()
	if p == nil {
		return
	}
	kinds := []string{promptsKind.method}
	if k.method == mcp.MethodNotificationResourcesListChanged {
		kinds = []string{resourcesKind.method, templatesKind.method}
	}
	for src := range p.servers {
		s.agg.invalidate(kinds, src)
	}
	if k.user == "" {
		s.mcp.SendNotificationToAllClients(k.method, nil)
		return
	}
	for _, session := range s.sessions.ofUser(k.user) {
		if err := s.mcp.SendNotificationToSpecificClient(session, k.method, nil); err != nil {
			s.log.Debug("MCP list change not delivered", "error", err.Error())
		}
	}
}

// listsChanged tells every session that resources and prompts may have
// changed (the tool cache rebuilt) and forgets the routes learned from the
// old lists.
func (s *Server) listsChanged() {
	s.agg.forget()
	s.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
	s.mcp.SendNotificationToAllClients(mcp.MethodNotificationPromptsListChanged, nil)
}

// caller is the identity of a non-tool request: the same rules as a tool
// call's (_meta over headers, the session's thread by default).
func (s *Server) caller(ctx context.Context, meta *mcp.Meta) (dispatch.Request, error) {
	req := mcp.CallToolRequest{}
	req.Params.Meta = meta
	return s.identify(ctx, req)
}

// target is a non-tool request's caller and the snapshot it runs on.
func (s *Server) target(ctx context.Context, meta *mcp.Meta) (dispatch.Request, *toolcache.ToolSet, error) {
	call, err := s.caller(ctx, meta)
	if err != nil {
		return call, nil, err
	}
	snap, err := s.cache.ToolSet(ctx)
	if err != nil {
		return call, nil, fmt.Errorf("MCP servers are unavailable: %s", dispatch.Redact(err.Error()))
	}
	return call, snap, nil
}

// upstreamRequest is a non-tool request for call. No _meta of the
// downstream's travels: its protocol fields are this door's, and its
// antler/ keys are the door's carriers.
func upstreamRequest(call dispatch.Request, method string, params json.RawMessage) dispatch.Request {
	return dispatch.Request{UserID: call.UserID, ThreadID: call.ThreadID, Secrets: call.Secrets, Method: method, Params: params, LiveOnly: call.LiveOnly}
}

// serverDeclares reports whether a server's capabilities offer key (and, when
// flag is set, key.flag: true).
func serverDeclares(caps json.RawMessage, key, flag string) bool {
	var all map[string]json.RawMessage
	if json.Unmarshal(caps, &all) != nil {
		return false
	}
	v, ok := all[key]
	if !ok || string(v) == "null" {
		return false
	}
	if flag == "" {
		return true
	}
	var sub map[string]any
	_ = json.Unmarshal(v, &sub)
	b, _ := sub[flag].(bool)
	return b
}

// errNotOffered is a server that does not declare what a request needs.
var errNotOffered = errors.New("not offered by this server")

// removedIn20260728 are the methods that revision dropped
// (resources/subscribe gave way to subscriptions/listen); a server that
// speaks it answers them as an unknown session would.
var removedIn20260728 = map[string]bool{
	string(mcp.MethodResourcesSubscribe):   true,
	string(mcp.MethodResourcesUnsubscribe): true,
}

// offered sends method with params on conn if the server declares key
// (key.flag with flag) and its revision has the method.
func offered(key, flag, method string, params json.RawMessage) dispatch.Op {
	return func(ctx context.Context, conn *upstream.Conn) (json.RawMessage, error) {
		if !serverDeclares(conn.Capabilities(), key, flag) {
			return nil, errNotOffered
		}
		if removedIn20260728[method] && mcp.IsModernProtocol(conn.ProtocolVersion()) {
			return nil, fmt.Errorf("%w: %s on a %s connection", errNotOffered, method, conn.ProtocolVersion())
		}
		return conn.Request(ctx, method, params)
	}
}

// listOp lists every page of kind on a connection (an empty array when the
// server does not offer it).
func listOp(kind listKind) dispatch.Op {
	return func(ctx context.Context, conn *upstream.Conn) (json.RawMessage, error) {
		if !serverDeclares(conn.Capabilities(), kind.capability, "") {
			return json.RawMessage("[]"), nil
		}
		var all []json.RawMessage
		cursor := ""
		for range maxUpstreamPages {
			params := json.RawMessage(`{}`)
			if cursor != "" {
				params, _ = json.Marshal(map[string]string{"cursor": cursor})
			}
			raw, err := conn.Request(ctx, kind.method, params)
			if err != nil {
				return nil, err
			}
			var page map[string]json.RawMessage
			if err := json.Unmarshal(raw, &page); err != nil {
				return nil, fmt.Errorf("%s: %w", kind.method, err)
			}
			var items []json.RawMessage
			if v, ok := page[kind.field]; ok {
				if err := json.Unmarshal(v, &items); err != nil {
					return nil, fmt.Errorf("%s: %s: %w", kind.method, kind.field, err)
				}
			}
			all = append(all, items...)
			var next string
			if v, ok := page["nextCursor"]; ok {
				_ = json.Unmarshal(v, &next)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if all == nil {
			all = []json.RawMessage{}
		}
		return json.Marshal(all)
	}
}

// listBound bounds one server's list: its session_init_timeout, which also
// covers starting the caller's stdio session (tools/call_timeout bounds the
// request itself on the wire).
func listBound(ctx context.Context, srv *config.Server) (context.Context, context.CancelFunc) {
	if srv.SessionInitTimeout > 0 {
		return context.WithTimeout(ctx, srv.SessionInitTimeout)
	}
	return context.WithCancel(ctx)
}

// list lists kind on every connected server for call, concurrently, and
// remembers the routes.
func (s *Server) list(ctx context.Context, snap *toolcache.ToolSet, call dispatch.Request, kind listKind) *listing {
	servers := snap.ConnectedServers()
	raws := make([][]json.RawMessage, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() {
			lctx, cancel := listBound(ctx, srv)
			defer cancel()
			raw, err := snap.Send(lctx, srv.Name, upstreamRequest(call, kind.method, nil), listOp(kind))
			if err == nil {
				err = json.Unmarshal(raw, &raws[i])
			}
			if err != nil {
				s.log.Warn("MCP list skipped a server", "method", kind.method, "server", srv.Name, "error", dispatch.Redact(err.Error()))
			}
		})
	}
	wg.Wait()
	l := s.build(kind, servers, raws)
	l.key = keyOf(snap, call, kind)
	s.agg.remember(l)
	return l
}

// keyOf is whose listing of kind a call's is (see listingKey).
func keyOf(snap *toolcache.ToolSet, call dispatch.Request, kind listKind) listingKey {
	k := listingKey{snap: snap, user: call.UserID, kind: kind.method}
	for _, srv := range snap.ConnectedServers() {
		if srv.IsStdio() {
			k.thread = call.ThreadID
			break
		}
	}
	return k
}

// build merges the servers' items in configuration order: a prompt is
// exposed under its server's exposed name (the first in config order keeps
// a name two servers want, as for tools); a URI or URI template two servers
// list is rewritten for the later one (RewrittenScheme).
func (s *Server) build(kind listKind, servers []*config.Server, raws [][]json.RawMessage) *listing {
	l := &listing{routes: map[string]route{}, servers: map[string]bool{}}
	for i, srv := range servers {
		l.servers[srv.Name] = true
		for _, item := range raws[i] {
			var obj map[string]json.RawMessage
			var key string
			if json.Unmarshal(item, &obj) != nil || json.Unmarshal(obj[kind.key], &key) != nil || key == "" {
				continue
			}
			exposed := key
			if kind == promptsKind {
				exposed = srv.ExposedName(key)
			} else if strings.HasPrefix(key, RewrittenScheme) {
				// A URI in the door's own scheme names its server: an
				// upstream's is its own, never another server's.
				exposed = RewrittenScheme + srv.Name + "/" + key
			}
			if winner, taken := l.routes[exposed]; taken {
				if kind == promptsKind {
					s.log.Warn("MCP prompt name collision; keeping the first in config order", "name", exposed, "server", srv.Name, "kept_from", winner.server)
					continue
				}
				exposed = RewrittenScheme + srv.Name + "/" + key
				if _, taken := l.routes[exposed]; taken {
					continue
				}
			}
			if exposed != key {
				obj[kind.key], _ = json.Marshal(exposed)
				item, _ = json.Marshal(obj)
			}
			r := route{server: srv.Name, name: key}
			if kind == templatesKind {
				var t mcp.URITemplate
				if err := t.UnmarshalJSON([]byte(fmt.Sprintf("%q", key))); err == nil {
					l.templates = append(l.templates, template{match: &t, route: r})
				}
			}
			l.routes[exposed] = r
			l.items = append(l.items, item)
			l.size += len(item) + len(exposed) + len(key)
		}
	}
	return l
}

// listPage is one page of a list, between its hooks.
type listPage struct {
	items []json.RawMessage
	next  mcp.Cursor
}

// cursorState is what a cursor carries: the listing it pages and the
// offset of the next page.
type cursorState struct {
	Listing string `json:"l"`
	Offset  int    `json:"o"`
}

// forgedCursor is what a refused cursor is replaced with before mcp-go's
// own handler runs: not base64, so mcp-go answers -32602 (with its own
// fixed message: no hook can set it, and the client's cursor is not in it).
const forgedCursor = "!"

// Why a cursor was refused, for the log.
var (
	errCursorInvalid = errors.New("invalid cursor")
	errCursorExpired = errors.New("cursor expired, list again")
)

// paged is the listing and offset a cursor names for the caller.
func (s *Server) paged(snap *toolcache.ToolSet, call dispatch.Request, kind listKind, cursor string) (*listing, int, error) {
	var st cursorState
	b, err := base64.StdEncoding.DecodeString(cursor)
	if err != nil || json.Unmarshal(b, &st) != nil || st.Listing == "" || st.Offset <= 0 {
		return nil, 0, errCursorInvalid
	}
	l := s.agg.named(st.Listing)
	if l == nil {
		return nil, 0, errCursorExpired
	}
	if l.key != keyOf(snap, call, kind) || st.Offset >= len(l.items) {
		return nil, 0, errCursorInvalid
	}
	return l, st.Offset, nil
}

// beforeList parks the page the request asks for: without a cursor the
// first of a fresh listing of kind, with one the next of the listing it
// names (no upstream is asked again); a cursor this door did not issue for
// this caller's list of kind, or whose listing is gone, is replaced so that
// mcp-go refuses it.
func (s *Server) beforeList(ctx context.Context, kind listKind, req any, params *mcp.PaginatedParams) {
	s.sync(ctx)
	call, snap, err := s.target(ctx, params.Meta)
	if err != nil {
		s.log.Warn("MCP list not served", "method", kind.method, "error", err.Error())
		return
	}
	var l *listing
	offset := 0
	if c := string(params.Cursor); c != "" {
		if l, offset, err = s.paged(snap, call, kind, c); err != nil {
			s.log.Debug("MCP list cursor refused", "method", kind.method, "reason", err.Error())
			params.Cursor = forgedCursor
			return
		}
	} else {
		l = s.list(ctx, snap, call, kind)
	}
	end := min(offset+s.agg.pageSize, len(l.items))
	p := listPage{items: l.items[offset:end]}
	if end < len(l.items) {
		b, _ := json.Marshal(cursorState{Listing: l.id, Offset: end})
		p.next = mcp.Cursor(base64.StdEncoding.EncodeToString(b))
	}
	// mcp-go pages its own (empty) registry with the cursor next: a
	// cursor of ours is base64 to it too, which it takes as "after
	// something".
	s.agg.pending.Store(req, p)
}

// page takes the page beforeList parked for req (none: an empty one).
func (s *Server) page(req any) listPage {
	v, ok := s.agg.pending.LoadAndDelete(req)
	if !ok {
		return listPage{}
	}
	return v.(listPage)
}

// typed decodes a page's items into mcp-go's types (they cover every field
// of the revisions it speaks); an item it cannot decode is dropped.
func typed[T any](s *Server, items []json.RawMessage) []T {
	out := make([]T, 0, len(items))
	for _, raw := range items {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			s.log.Warn("MCP list item not relayable", "error", err.Error())
			continue
		}
		out = append(out, v)
	}
	return out
}

// routed is what a before hook hands the catch-all handler.
type routed struct {
	snap  *toolcache.ToolSet
	call  dispatch.Request
	route route  // server "" (a read): ask each server that offers resources
	asked string // the name or URI the client used
	err   error
}

// withRoute sets meta's route key, creating meta if needed.
func withRoute(meta **mcp.Meta, r *routed) {
	if *meta == nil {
		*meta = &mcp.Meta{}
	}
	if (*meta).AdditionalFields == nil {
		(*meta).AdditionalFields = map[string]any{}
	}
	(*meta).AdditionalFields[routeKey] = r
}

// routeOf is the route a before hook set (never one a client sent: JSON
// decodes to no *routed).
func routeOf(meta *mcp.Meta) (*routed, bool) {
	if meta == nil {
		return nil, false
	}
	r, ok := meta.AdditionalFields[routeKey].(*routed)
	return r, ok && r != nil
}

// recent is the caller's last listing of kind, or a fresh one when none is
// remembered.
func (s *Server) recent(ctx context.Context, snap *toolcache.ToolSet, call dispatch.Request, kind listKind) *listing {
	if l := s.agg.recalled(keyOf(snap, call, kind)); l != nil {
		return l
	}
	return s.list(ctx, snap, call, kind)
}

// lookup finds key in the caller's last list of kind (listed when none is
// remembered; a change upstream drops it): a name it lacks is not looked
// for again upstream, so unknown names cost no list each.
func (s *Server) lookup(ctx context.Context, snap *toolcache.ToolSet, call dispatch.Request, kind listKind, key string) (*listing, route, bool) {
	l := s.recent(ctx, snap, call, kind)
	r, ok := l.routes[key]
	return l, r, ok
}

// connected reports whether name is a connected server of snap.
func connected(snap *toolcache.ToolSet, name string) bool {
	for _, srv := range snap.ConnectedServers() {
		if srv.Name == name {
			return true
		}
	}
	return false
}

// scheme is a URI's scheme ("" when it has none).
func scheme(uri string) string {
	i := strings.Index(uri, ":")
	if i <= 0 || strings.ContainsAny(uri[:i], "/?#") {
		return ""
	}
	return uri[:i]
}

// resolveURI routes a resource URI by the caller's last lists (listed
// once when none is remembered, never again per unknown URI: a client
// that reads what it has not listed cannot make every read a list of
// every server): a listed one to its server; a rewritten one
// (RewrittenScheme) to the server it names; one a listed template matches
// to that template's server (config order); one whose scheme only one
// server lists to that server. Anything else has no route: "not found"
// without asking any server.
func (s *Server) resolveURI(ctx context.Context, snap *toolcache.ToolSet, call dispatch.Request, uri string) route {
	if rest, ok := strings.CutPrefix(uri, RewrittenScheme); ok {
		if name, original, ok := strings.Cut(rest, "/"); ok && connected(snap, name) {
			return route{server: name, name: original}
		}
	}
	resources := s.recent(ctx, snap, call, resourcesKind)
	if r, ok := resources.routes[uri]; ok {
		return r
	}
	for _, t := range s.recent(ctx, snap, call, templatesKind).templates {
		if t.match.Regexp().MatchString(uri) {
			return route{server: t.route.server, name: uri}
		}
	}
	if sch := scheme(uri); sch != "" && sch+"://" != RewrittenScheme {
		owner := ""
		for _, r := range resources.routes {
			if scheme(r.name) != sch || r.server == owner {
				continue
			}
			if owner != "" {
				return route{name: uri} // two servers: no guess
			}
			owner = r.server
		}
		if owner != "" {
			return route{server: owner, name: uri}
		}
	}
	return route{name: uri}
}

// beforeRead routes a resources/read for the caller.
func (s *Server) beforeRead(ctx context.Context, _ any, req *mcp.ReadResourceRequest) {
	r := &routed{asked: req.Params.URI}
	if r.call, r.snap, r.err = s.target(ctx, req.Params.Meta); r.err == nil {
		r.route = s.resolveURI(ctx, r.snap, r.call, req.Params.URI)
	}
	withRoute(&req.Params.Meta, r)
}

// readResource is the catch-all template's handler: the read goes to the
// routed server with the server's own URI; an unrouted one is not found.
func (s *Server) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	r, ok := routeOf(req.Params.Meta)
	if !ok {
		return nil, errors.New("resource read was not routed")
	}
	if r.err != nil {
		return nil, r.err
	}
	err := fmt.Errorf("resource %q: %w", truncate(r.asked), server.ErrResourceNotFound)
	if r.route.server == "" {
		return nil, err
	}
	params, _ := json.Marshal(map[string]string{"uri": r.route.name})
	for _, name := range []string{r.route.server} {
		raw, serr := r.snap.Send(ctx, name, upstreamRequest(r.call, string(mcp.MethodResourcesRead), params), offered("resources", "", string(mcp.MethodResourcesRead), params))
		if serr != nil {
			if !errors.Is(serr, errNotOffered) {
				err = callError(serr)
			}
			continue
		}
		res, perr := mcp.ParseReadResourceResult((*json.RawMessage)(&raw))
		if perr != nil {
			s.log.Warn("MCP resource not relayable", "server", name, "error", perr.Error())
			return nil, fmt.Errorf("resource %q: the server's answer cannot be relayed", truncate(r.asked))
		}
		return exposedContents(res.Contents, r.route.name, r.asked), nil
	}
	return nil, err
}

// exposedContents names contents by the URI the client read when the
// server answered with its own, rewritten one.
func exposedContents(contents []mcp.ResourceContents, original, asked string) []mcp.ResourceContents {
	if original == asked {
		return contents
	}
	for i, c := range contents {
		switch v := c.(type) {
		case mcp.TextResourceContents:
			if v.URI == original {
				v.URI = asked
				contents[i] = v
			}
		case mcp.BlobResourceContents:
			if v.URI == original {
				v.URI = asked
				contents[i] = v
			}
		}
	}
	return contents
}

// callError is an upstream failure as the client sees it: the call path's
// model-safe message.
func callError(err error) error {
	var ce *dispatch.CallError
	if errors.As(err, &ce) {
		return errors.New(ce.Message)
	}
	return errors.New(dispatch.Redact(err.Error()))
}

// beforeGetPrompt routes a prompts/get: a prompt the caller's list has goes
// to the catch-all prompt with its route; any other name is left for
// mcp-go to answer "not found" (-32602).
func (s *Server) beforeGetPrompt(ctx context.Context, _ any, req *mcp.GetPromptRequest) {
	asked := req.Params.Name
	call, snap, err := s.target(ctx, req.Params.Meta)
	if err != nil {
		withRoute(&req.Params.Meta, &routed{err: err, asked: asked})
		req.Params.Name = catchAllPrompt
		return
	}
	if _, r, ok := s.lookup(ctx, snap, call, promptsKind, asked); ok {
		withRoute(&req.Params.Meta, &routed{snap: snap, call: call, route: r, asked: asked})
		req.Params.Name = catchAllPrompt
		return
	}
	if asked == catchAllPrompt {
		req.Params.Name = "" // not a prompt of any server
	}
}

// getPrompt is the catch-all prompt's handler.
func (s *Server) getPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	r, ok := routeOf(req.Params.Meta)
	if !ok {
		return nil, errors.New("prompt was not routed")
	}
	if r.err != nil {
		return nil, r.err
	}
	p := map[string]any{"name": r.route.name}
	if len(req.Params.Arguments) > 0 {
		p["arguments"] = req.Params.Arguments
	}
	params, _ := json.Marshal(p)
	raw, err := r.snap.Send(ctx, r.route.server, upstreamRequest(r.call, string(mcp.MethodPromptsGet), params), nil)
	if err != nil {
		return nil, callError(err)
	}
	res, err := mcp.ParseGetPromptResult((*json.RawMessage)(&raw))
	if err != nil {
		s.log.Warn("MCP prompt not relayable", "server", r.route.server, "error", err.Error())
		return nil, fmt.Errorf("prompt %q: the server's answer cannot be relayed", truncate(r.asked))
	}
	// The upstream's protocol fields are its own (as for tools/call).
	res.ResultType, res.InputRequests, res.RequestState = "", nil, ""
	return res, nil
}

// completionToken is a parked completion route's name in the reference
// mcp-go hands its provider.
func completionToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "antler-completion-" + hex.EncodeToString(b[:])
}

// beforeComplete routes a completion/complete: ref/prompt to the prompt's
// server with its own name, ref/resource to the server that lists the
// URI template (or the URI). The route is parked under a token that
// replaces the reference's name.
func (s *Server) beforeComplete(ctx context.Context, _ any, req *mcp.CompleteRequest) {
	call, snap, err := s.target(ctx, nil)
	if err != nil {
		return
	}
	park := func(r route, asked string) string {
		token := completionToken()
		s.agg.parked.Store(token, &routed{snap: snap, call: call, route: r, asked: asked})
		return token
	}
	switch ref := req.Params.Ref.(type) {
	case mcp.PromptReference:
		if _, r, ok := s.lookup(ctx, snap, call, promptsKind, ref.Name); ok {
			ref.Name = park(r, ref.Name)
			req.Params.Ref = ref
		}
	case mcp.ResourceReference:
		if _, r, ok := s.lookup(ctx, snap, call, templatesKind, ref.URI); ok {
			ref.URI = park(r, ref.URI)
			req.Params.Ref = ref
		} else if r := s.resolveURI(ctx, snap, call, ref.URI); r.server != "" {
			ref.URI = park(r, ref.URI)
			req.Params.Ref = ref
		}
	}
}

// completions is the door's completion provider for both reference kinds.
type completions struct{ s *Server }

func (c completions) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.s.complete(ctx, "ref/prompt", "name", name, arg, cc)
}

func (c completions) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	return c.s.complete(ctx, "ref/resource", "uri", uri, arg, cc)
}

// complete sends a parked completion to its server.
func (s *Server) complete(ctx context.Context, refType, refField, token string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	v, ok := s.agg.parked.LoadAndDelete(token)
	if !ok {
		return nil, fmt.Errorf("completion: unknown %s %q", refType, truncate(token))
	}
	r := v.(*routed)
	p := map[string]any{"ref": map[string]string{"type": refType, refField: r.route.name}, "argument": arg}
	if len(cc.Arguments) > 0 {
		p["context"] = cc
	}
	params, _ := json.Marshal(p)
	raw, err := r.snap.Send(ctx, r.route.server, upstreamRequest(r.call, string(mcp.MethodCompletionComplete), params),
		offered("completions", "", string(mcp.MethodCompletionComplete), params))
	if errors.Is(err, errNotOffered) {
		return &mcp.Completion{Values: []string{}}, nil
	}
	if err != nil {
		return nil, callError(err)
	}
	var res struct {
		Completion mcp.Completion `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("completion: the server's answer cannot be relayed")
	}
	return &res.Completion, nil
}

// broadcast sends method to every connected server that declares key
// (key.flag with flag) on the caller's connection (for stdio, the
// caller's own session), concurrently; failures are logged.
func (s *Server) broadcast(ctx context.Context, method string, params json.RawMessage, key, flag string) {
	call, snap, err := s.target(ctx, nil)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, srv := range snap.ConnectedServers() {
		wg.Go(func() {
			_ = s.send(ctx, snap, call, srv, method, params, key, flag)
		})
	}
	wg.Wait()
}

// send sends one forwarded request, bounded like a list, and logs a
// failure.
func (s *Server) send(ctx context.Context, snap *toolcache.ToolSet, call dispatch.Request, srv *config.Server, method string, params json.RawMessage, key, flag string) error {
	sctx, cancel := listBound(ctx, srv)
	defer cancel()
	_, err := snap.Send(sctx, srv.Name, upstreamRequest(call, method, params), offered(key, flag, method, params))
	if err != nil && !errors.Is(err, errNotOffered) && !errors.Is(err, dispatch.ErrNotLive) {
		s.log.Warn("MCP request not forwarded", "method", method, "server", srv.Name, "error", dispatch.Redact(err.Error()))
	}
	return err
}

// release ends upstream, in the background, the subscriptions a departed
// session was the last to hold (at its end, or when a subscribe of it
// returned after it), acting as the user who made each (without
// per-request secrets, which are never kept), on the connection that holds
// them only: a stdio process that has ended (its thread retired with the
// session, or idled out) is not started again to be told, nor a shared
// connection dialled again. A session's end must not wait on a server, and
// a host that is closing ends its connections anyway.
func (s *Server) release(orphans []orphan) {
	if len(orphans) == 0 || s.watchCtx.Err() != nil {
		return
	}
	go func() {
		for _, o := range orphans {
			s.releaseOne(o)
		}
	}()
}

// releaseOne ends o upstream unless a session has subscribed to it again.
func (s *Server) releaseOne(o orphan) {
	defer s.agg.lockSubscription(o.key)()
	if s.agg.holders(o.key) > 0 {
		return
	}
	snap, err := s.cache.ToolSet(s.watchCtx)
	if err != nil {
		return
	}
	for _, srv := range snap.ConnectedServers() {
		if srv.Name == o.key.server {
			call := dispatch.Request{UserID: o.user, ThreadID: o.thread, LiveOnly: true}
			err := s.sendSubscription(s.watchCtx, snap, call, srv, string(mcp.MethodResourcesUnsubscribe), o.key.uri)
			switch {
			case errors.Is(err, dispatch.ErrNotLive):
				s.log.Debug("MCP subscription of an ended session left: its connection is gone", "server", srv.Name)
			case err == nil:
				s.log.Debug("MCP subscription of an ended session released", "server", srv.Name)
			}
			return
		}
	}
}

// sendSubscription sends resources/subscribe or unsubscribe (method) of the
// server's own uri to srv, if it offers subscriptions.
func (s *Server) sendSubscription(ctx context.Context, snap *toolcache.ToolSet, call dispatch.Request, srv *config.Server, method, uri string) error {
	params, _ := json.Marshal(map[string]string{"uri": uri})
	return s.send(ctx, snap, call, srv, method, params, "resources", "subscribe")
}

// forwardSubscription sends resources/subscribe or unsubscribe to the
// server that owns uri, with its own URI, if it offers subscriptions. The
// upstream holds one subscription per connection, and a connection may
// serve several sessions (an HTTP or SSE server's serves every user's), so
// an unsubscribe goes upstream only when no other session is subscribed
// through the same connection: one caller cannot end another's updates.
func (s *Server) forwardSubscription(ctx context.Context, method, uri string) {
	call, snap, err := s.target(ctx, nil)
	if err != nil {
		return
	}
	r := s.resolveURI(ctx, snap, call, uri)
	for _, srv := range snap.ConnectedServers() {
		if srv.Name != r.server {
			continue
		}
		k := subKey{server: srv.Name, uri: r.name}
		if srv.IsStdio() {
			k.user, k.thread = call.UserID, call.ThreadID
		}
		session := ""
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			session = cs.SessionID()
		}
		sub := subscriber{exposed: uri, user: call.UserID, thread: call.ThreadID}
		// One change at a time, so the last unsubscribe and a new
		// subscribe to the same resource reach the upstream in the order
		// they were decided.
		defer s.agg.lockSubscription(k)()
		// The change runs to its answer even if the session ends on the
		// way (only the host's end stops it): interrupted, it would leave
		// unknown whether the upstream holds the subscription.
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		defer stop()
		defer context.AfterFunc(s.watchCtx, stop)()
		if method == string(mcp.MethodResourcesUnsubscribe) {
			if s.agg.subscribe(k, session, sub, false) > 0 {
				return // another session's subscription holds it upstream
			}
			_ = s.sendSubscription(sctx, snap, call, srv, method, r.name)
			return
		}
		if session == "" {
			_ = s.sendSubscription(sctx, snap, call, srv, method, r.name)
			return
		}
		s.agg.subscribing(session)
		err := s.sendSubscription(sctx, snap, call, srv, method, r.name)
		if live, left := s.agg.subscribed(k, session, sub, err == nil); !live && left == 0 && err == nil {
			// The session ended while its subscribe was on the way and no
			// one else holds the subscription: take it back, as its other
			// subscriptions were at its end (once this change is done).
			s.release([]orphan{{k, sub}})
		}
		return
	}
	s.log.Warn("MCP subscription names a resource no server lists", "method", method)
}

// Subscriptions are kept for their session's life, by the door and by
// mcp-go, so what one user may hold is bounded: a URI of at most
// maxSubscriptionURI bytes, and maxSubscriptionsPerUser of them over all
// the user's sessions.
const (
	maxSubscriptionURI      = 8 << 10
	maxSubscriptionsPerUser = 1024
)

// upstreamMethods are the requests, other than tools/call (which takes a
// call slot of its own), that the door sends on to upstream servers.
var upstreamMethods = map[mcp.MCPMethod]bool{
	mcp.MethodPromptsGet: true, mcp.MethodResourcesRead: true, mcp.MethodCompletionComplete: true,
	mcp.MethodResourcesSubscribe: true, mcp.MethodResourcesUnsubscribe: true, mcp.MethodSetLogLevel: true,
	mcp.MethodResourcesList: true, mcp.MethodResourcesTemplatesList: true, mcp.MethodPromptsList: true,
}

// admitRequest bounds what one user has in flight towards the upstreams
// besides tool calls (max_concurrent_calls of them, counted apart from the
// calls) and the user's resource subscriptions, before mcp-go handles the
// request (from initRequest: its error is the answer). Over legacy SSE
// mcp-go answers a POST at once and runs the request on its own, so
// nothing else bounds how many one session sends on. mcp-go ends every
// request it admits in its success or error hook, which give the places
// back.
func (s *Server) admitRequest(ctx context.Context, msg requestHead) error {
	if !upstreamMethods[msg.Method] {
		return nil
	}
	subscribe := msg.Method == mcp.MethodResourcesSubscribe
	if subscribe && len(msg.Params.URI) > maxSubscriptionURI {
		return fmt.Errorf("resources/subscribe: the uri is longer than %d bytes", maxSubscriptionURI)
	}
	call, err := s.identify(ctx, mcp.CallToolRequest{})
	if err != nil {
		return nil // mcp-go's handling reports the request's own problem
	}
	if !s.requests.admit(call.UserID) {
		return fmt.Errorf("too many requests in flight: this caller has %d (http.per_principal.max_concurrent_calls)", s.requests.max)
	}
	if subscribe {
		if n, ok := s.agg.admitSubscribe(call.UserID, maxSubscriptionsPerUser); !ok {
			s.requests.end(call.UserID)
			return fmt.Errorf("too many resource subscriptions: this caller holds %d (unsubscribe from one first)", n)
		}
	}
	return nil
}

// requestEnded gives back a request's place when mcp-go has handled it.
func (s *Server) requestEnded(ctx context.Context, method mcp.MCPMethod) {
	if !upstreamMethods[method] {
		return
	}
	if call, err := s.identify(ctx, mcp.CallToolRequest{}); err == nil {
		s.requests.end(call.UserID)
	}
}

// inflight counts each user's requests admitted and not yet ended.
type inflight struct {
	mu  sync.Mutex
	n   map[string]int
	max int
}

func (f *inflight) admit(user string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[user] >= f.max {
		return false
	}
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[user]++
	return true
}

func (f *inflight) end(user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[user]--; f.n[user] <= 0 {
		delete(f.n, user)
	}
}

// subscribeEnded gives back an admitted subscribe's place.
func (s *Server) subscribeEnded(ctx context.Context) {
	if call, err := s.identify(ctx, mcp.CallToolRequest{}); err == nil {
		s.agg.subscribeEnded(call.UserID)
	}
}
