"""Following the agents as they work: the watcher that keeps a core's board rows fresh
(used by the server, `status --watch` and `watch`), and desktop notifications."""
