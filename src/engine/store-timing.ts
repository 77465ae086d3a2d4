// One proxy times every store call; whoever needs the durations (backpressure's
// store signal, the latency histogram) is an observer of it, so a call is
// wrapped once however many listen.

import type { Store } from "../store/store.js";

/** Told each call's method and duration in ms, once it settles (failed calls included, with their error). */
export type StoreCallObserver = (op: string, ms: number, error?: unknown) => void;

export function timedStore(store: Store, observers: readonly StoreCallObserver[]): Store {
  const observe = (op: string, started: number, error?: unknown) => {
    const ms = performance.now() - started;
    for (const o of observers) o(op, ms, error);
  };
  return new Proxy(store, {
    get: (target, prop, receiver) => {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return (...args: unknown[]) => {
        const started = performance.now();
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (result instanceof Promise)
          result.then(
            () => observe(prop, started),
            (error: unknown) => observe(prop, started, error),
          );
        else observe(prop, started);
        return result;
      };
    },
  });
}
