// Command answerliar is a Wasm task driver, written without the SDK, that
// declares the answer feature (ABI 1.1) but does not export
// antler_task_answer: the host must refuse to load it.
package main

func main() {}
