// One place to see every failure of a store: a driver turns its error codes
// into StoreUnavailableError here (sqlite/errors.ts), and the engine watches
// the faults that come out (engine/store-health.ts). Every Store method is
// asynchronous, so every failure arrives as a rejection.

import type { Store } from "./store.js";

type Method = (...args: unknown[]) => Promise<unknown>;

/** The store, with each method's rejection passed to onError (named by the method), which throws what callers see. */
export function onStoreError(store: Store, onError: (error: unknown, op: string) => never): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      const method = value as Method;
      return (...args: unknown[]) => method.apply(target, args).catch((error: unknown) => onError(error, String(prop)));
    },
  });
}
