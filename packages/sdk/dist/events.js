// The Worker's typed lifecycle events: one stream for metrics, logs and tests.
export {};
//# sourceMappingURL=events.js.map