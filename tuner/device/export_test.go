package device

// Unregister removes a backend that a test registered, so that the trial
// additions of one test leave the registry as the others expect it.
func Unregister(name string) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, name)
}
