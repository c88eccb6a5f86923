package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// TestEventStoreReplaysTheLastMax: whatever the number of events stored,
// exactly the session's last max can be resumed from, and replay sends the
// later events of the same stream only.
func TestEventStoreReplaysTheLastMax(t *testing.T) {
	const limit = 4
	for _, stored := range []int{3, limit, limit + 1, 2*limit - 1, 2 * limit, 5*limit + 3} {
		t.Run(strconv.Itoa(stored), func(t *testing.T) {
			ctx := context.Background()
			s := newEventStore(storeLimits{events: limit, sessionBytes: 1 << 20, totalBytes: 1 << 20, eventBytes: 1 << 20}, nil)
			var ids []string
			for i := range stored {
				stream := "a"
				if i%2 == 1 {
					stream = "b"
				}
				id, err := s.StoreEvent(ctx, "sess", stream, json.RawMessage(strconv.Itoa(i)))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if _, err := s.StoreEvent(ctx, "other", "a", json.RawMessage(`"x"`)); err != nil {
				t.Fatal(err)
			}
			oldest := max(0, stored-limit)
			for i, id := range ids {
				var got []string
				stream, err := s.ReplayEventsAfter(ctx, "sess", id, func(_ string, m json.RawMessage) error {
					got = append(got, string(m))
					return nil
				})
				if i < oldest {
					if !errors.Is(err, server.ErrUnknownEventID) {
						t.Errorf("event %d of %d (dropped): err %v, want ErrUnknownEventID", i, stored, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("event %d of %d: %v", i, stored, err)
				}
				var want []string
				for j := i + 2; j < stored; j += 2 { // the same stream alternates
					want = append(want, strconv.Itoa(j))
				}
				if wantStream := map[bool]string{true: "b", false: "a"}[i%2 == 1]; stream != wantStream || len(got) != len(want) {
					t.Fatalf("event %d of %d: stream %q, replayed %v, want %q %v", i, stored, stream, got, wantStream, want)
				}
				for k := range want {
					if got[k] != want[k] {
						t.Fatalf("event %d of %d: replayed %v, want %v", i, stored, got, want)
					}
				}
			}
		})
	}
}
