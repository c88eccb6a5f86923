package task

// Scope is whose tasks a call sees: one user's tasks in one thread. A task
// belongs to the user and thread that submitted it, and every lookup,
// answer, cancellation and event stream of the task API is confined to
// its caller's scope, so another user's or thread's task stays invisible.
type Scope struct {
	User   string
	Thread string
}
