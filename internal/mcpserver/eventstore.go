package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// eventStore is an in-memory mcp-go EventStore bounded per session and in
// all, so a client that reconnects with Last-Event-ID is redelivered what
// it missed, and clients that never read cannot grow the host's memory
// without limit (mcp-go's own InMemoryEventStore keeps every event until
// the session ends). It keeps:
//
//   - a session's last limits.events events across all of its streams,
//     within limits.sessionBytes of messages;
//   - a user's sessions' messages within a share of the whole (the user's
//     own oldest dropped first), so one user's 64 sessions cannot push out
//     every other user's events;
//   - limits.totalBytes of messages over all sessions, the oldest events
//     (whichever session's) dropped first;
//   - no message larger than limits.eventBytes: such an event keeps only
//     its id and stream.
//
// What a resuming client loses is what was dropped: resuming from an
// event no longer held answers server.ErrUnknownEventID (the client opens
// a fresh stream and misses everything before it); resuming from an
// earlier one, or from an event whose message was too large to keep,
// replays the later events that are held and skips the rest, so a result
// too large to keep, or already dropped, never reaches a client that was
// not connected when it was sent (its request then has no answer and the
// client must call again). Events live in process memory: a host restart
// forgets them, as it forgets the sessions.
type eventStore struct {
	limits storeLimits
	// owner is the user a session belongs to ("" when unknown).
	owner func(sessionID string) string

	mu       sync.Mutex
	seq      int64
	bytes    int64            // of messages held, over all sessions
	ofUser   map[string]int64 // of messages held, per user
	sessions map[string]*sessionEvents
}

// userShare is the part of totalBytes one user's sessions may hold.
const userShare = 8

// storeLimits bound an eventStore.
type storeLimits struct {
	events       int   // per session
	sessionBytes int64 // of messages, per session
	totalBytes   int64 // of messages, over all sessions
	eventBytes   int64 // the largest message kept
}

// The byte bounds of the door's event store.
const (
	maxSessionEventBytes = 4 << 20
	maxEventStoreBytes   = 64 << 20
	maxStoredEventBytes  = 1 << 20
)

type sessionEvents struct {
	user   string
	events []storedEvent // in id order
	bytes  int64         // of their messages
}

type storedEvent struct {
	id      int64
	stream  string
	message json.RawMessage // nil: too large to keep
}

// newEventStore returns a store within l; owner names a session's user
// (nil, or "": no user's share applies to it).
func newEventStore(l storeLimits, owner func(sessionID string) string) *eventStore {
	if owner == nil {
		owner = func(string) string { return "" }
	}
	return &eventStore{limits: l, owner: owner, ofUser: map[string]int64{}, sessions: map[string]*sessionEvents{}}
}

var _ server.EventStore = (*eventStore)(nil)

// StoreEvent records message as the session's next event.
func (s *eventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e := storedEvent{id: s.seq, stream: streamID}
	if int64(len(message)) <= s.limits.eventBytes {
		e.message = append(json.RawMessage(nil), message...)
	}
	se := s.sessions[sessionID]
	if se == nil {
		se = &sessionEvents{user: s.owner(sessionID)}
		s.sessions[sessionID] = se
	}
	se.events = append(se.events, e)
	se.bytes += int64(len(e.message))
	s.bytes += int64(len(e.message))
	s.ofUser[se.user] += int64(len(e.message))
	for len(se.events) > s.limits.events || se.bytes > s.limits.sessionBytes {
		s.dropOldest(se)
	}
	for se.user != "" && s.ofUser[se.user] > s.limits.totalBytes/userShare {
		s.dropOldest(s.oldestOf(se.user))
	}
	for s.bytes > s.limits.totalBytes {
		s.dropOldest(s.oldest())
	}
	return strconv.FormatInt(e.id, 10), nil
}

// dropOldest forgets the oldest event of se.
func (s *eventStore) dropOldest(se *sessionEvents) {
	n := int64(len(se.events[0].message))
	se.bytes -= n
	s.bytes -= n
	if s.ofUser[se.user] -= n; s.ofUser[se.user] <= 0 {
		delete(s.ofUser, se.user)
	}
	se.events[0] = storedEvent{}
	se.events = se.events[1:]
	if len(se.events) == 0 {
		se.events = nil // let the backing array go
	}
}

// oldest is the session holding the oldest event: each session's first
// is its oldest, and ids rise across sessions.
func (s *eventStore) oldest() *sessionEvents {
	var best *sessionEvents
	for _, se := range s.sessions {
		if len(se.events) > 0 && (best == nil || se.events[0].id < best.events[0].id) {
			best = se
		}
	}
	return best
}

// oldestOf is the session of user holding the user's oldest event with a
// message (one whose message was too large to keep holds no bytes).
func (s *eventStore) oldestOf(user string) *sessionEvents {
	var best *sessionEvents
	for _, se := range s.sessions {
		if se.user == user && se.bytes > 0 && (best == nil || se.events[0].id < best.events[0].id) {
			best = se
		}
	}
	return best
}

// ReplayEventsAfter sends the events after lastEventID on its stream.
func (s *eventStore) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	id, err := strconv.ParseInt(lastEventID, 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: %q", server.ErrUnknownEventID, lastEventID)
	}
	s.mu.Lock()
	var evs []storedEvent
	if se := s.sessions[sessionID]; se != nil {
		evs = se.events
	}
	i := sort.Search(len(evs), func(i int) bool { return evs[i].id >= id })
	if i == len(evs) || evs[i].id != id {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: %q", server.ErrUnknownEventID, lastEventID)
	}
	stream := evs[i].stream
	var later []storedEvent
	for _, e := range evs[i+1:] {
		if e.stream == stream && e.message != nil {
			later = append(later, e)
		}
	}
	s.mu.Unlock()
	for _, e := range later {
		if err := send(strconv.FormatInt(e.id, 10), e.message); err != nil {
			return stream, err
		}
	}
	return stream, nil
}

// PurgeSession forgets a finished session's events.
func (s *eventStore) PurgeSession(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[sessionID]; se != nil {
		s.bytes -= se.bytes
		if s.ofUser[se.user] -= se.bytes; s.ofUser[se.user] <= 0 {
			delete(s.ofUser, se.user)
		}
		delete(s.sessions, sessionID)
	}
	return nil
}

// held is the number of events and bytes of messages held for sessionID,
// and the bytes held in all.
func (s *eventStore) held(sessionID string) (events int, bytes, total int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.sessions[sessionID]; se != nil {
		events, bytes = len(se.events), se.bytes
	}
	return events, bytes, s.bytes
}
