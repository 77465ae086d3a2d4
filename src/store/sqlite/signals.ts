// Signals between the handles on one SQLite file in this process (the nodes of
// engine/cluster.test.ts): SQLite has no server to carry them between
// processes, and a single-process deployment needs none, since its one node
// acts on its own writes directly. Delivered on a later turn of the event
// loop, as a committed NOTIFY would be, never inside the publisher's call.

import type { SignalEvent } from "../store.js";

type Handler = (event: SignalEvent) => void;

const buses = new Map<string, Set<Handler>>();

/** The subscribers of one database file; an in-memory database gets a bus of its own per handle. */
export class SignalBus {
  constructor(private readonly key: string) {}

  publish(event: SignalEvent): void {
    const handlers = buses.get(this.key);
    if (!handlers) return;
    for (const handler of handlers) setImmediate(handler, event);
  }

  subscribe(handler: Handler): () => Promise<void> {
    let handlers = buses.get(this.key);
    if (!handlers) buses.set(this.key, (handlers = new Set()));
    const mine: Handler = (event) => handler(event); // a handler subscribed twice gets two subscriptions
    handlers.add(mine);
    return async () => {
      handlers.delete(mine);
      if (handlers.size === 0 && buses.get(this.key) === handlers) buses.delete(this.key);
    };
  }
}
