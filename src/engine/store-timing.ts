// One proxy times every store call; whoever needs the durations (backpressure's
// store signal, the latency histogram) is an observer of it, so a call is
// wrapped once however many listen.

import type { Store } from "../store/store.js";

/** Told each call's method and duration in ms, once it settles (failed calls included). */
export type StoreCallObserver = (op: string, ms: number) => void;

export function timedStore(store: Store, observers: readonly StoreCallObserver[]): Store {
  const observe = (op: string, started: number) => {
    const ms = performance.now() - started;
    for (const o of observers) o(op, ms);
  };
  return new Proxy(store, {
    get: (target, prop, receiver) => {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function" || typeof prop !== "string") return value;
      return (...args: unknown[]) => {
        const started = performance.now();
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        const done = () => observe(prop, started);
        if (result instanceof Promise) result.then(done, done);
        else done();
        return result;
      };
    },
  });
}
