// The HTTP layer's own Prometheus metrics, in a registry of their own (never
// prom-client's global one, so several apps in one process do not collide).
// /metrics serves the engine's text followed by these.

import { Histogram, Registry } from "prom-client";

export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export class HttpMetrics {
  readonly registry = new Registry();
  private readonly duration = new Histogram({
    name: "duetime_http_request_duration_seconds",
    help: "HTTP requests by method, route template and status, and how long they took (long polls included).",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  observe(method: string, route: string, status: number, seconds: number): void {
    this.duration.observe({ method, route, status: String(status) }, seconds);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
