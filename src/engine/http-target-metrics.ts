// Prometheus metrics of the HTTP-target executor, on the engine's registry.
// docs/http-targets.md explains each.

import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { HttpTargetRunner } from "./http-target.js";
import type { HttpTargetObserver } from "./http-target-settings.js";

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const BREAKER_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

/** Registers the metrics; returns the observer to hand to the runner. */
export function httpTargetMetrics(registry: Registry, runner: () => HttpTargetRunner | null): HttpTargetObserver {
  const calls = new Counter({
    name: "duetime_http_calls_total",
    help: "HTTP-target calls by outcome: success, throttled, transient, permanent, redirect, timeout, network, refused, aborted",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "duetime_http_call_duration_seconds",
    help: "Duration of HTTP-target calls that got an answer or timed out",
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const transitions = new Counter({
    name: "duetime_http_breaker_transitions_total",
    help: "Circuit-breaker state changes of target origins, by new state",
    labelNames: ["state"],
    registers: [registry],
  });
  const released = new Counter({
    name: "duetime_http_released_total",
    help: "Leased HTTP-target calls handed back unused, without spending an attempt, by reason: breaker (origin's breaker open), wait (waited too long for a cap, rate limit or probe), stop (the server stopped)",
    labelNames: ["reason"],
    registers: [registry],
  });
  new Gauge({
    name: "duetime_http_breaker_state",
    help: "Circuit breaker of each target origin: 0 closed, 1 half-open, 2 open",
    labelNames: ["origin"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of runner()?.targets() ?? []) this.set({ origin: t.origin }, BREAKER_VALUE[t.breaker]);
    },
  });
  new Gauge({
    name: "duetime_http_in_flight",
    help: "HTTP-target calls in flight, by origin",
    labelNames: ["origin"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of runner()?.targets() ?? []) this.set({ origin: t.origin }, t.inFlight);
    },
  });
  new Gauge({
    name: "duetime_http_waiting",
    help: "Leased HTTP-target calls waiting in memory for their origin (concurrency cap, rate limit or a half-open breaker's probe), by origin",
    labelNames: ["origin"],
    registers: [registry],
    collect() {
      this.reset();
      for (const t of runner()?.targets() ?? []) this.set({ origin: t.origin }, Number(t.waiting ?? 0));
    },
  });
  new Gauge({
    name: "duetime_http_waiting_probe",
    help: "Leased HTTP-target calls waiting in memory for the verdict of their origin's probe (breaker half-open)",
    registers: [registry],
    collect() {
      this.set(runner()?.totals().waitingProbe ?? 0);
    },
  });
  return {
    call(outcome) {
      calls.inc({ outcome: outcome.kind });
      if (outcome.status !== null || outcome.kind === "timeout") duration.observe(outcome.durationMs / 1000);
    },
    breaker(_origin, state) {
      transitions.inc({ state });
    },
    released(_origin, reason) {
      released.inc({ reason });
    },
  };
}
