// Cluster: the live nodes and every shard's owner and lease (GET /v1/cluster),
// and the HTTP-target origins with their circuit breakers (GET /v1/targets).
// Both need an admin key; another key is told so.

import type { ClusterView, TargetStatus } from "@duetime/sdk/contract";
import { api } from "../api";
import { ErrorBox, Section, Time, useLoad } from "../components";

export function ClusterPage() {
  const cluster = useLoad((signal) => api<ClusterView>("GET", "/v1/cluster", { signal }), [], 5000);
  const targets = useLoad((signal) => api<{ items: TargetStatus[] }>("GET", "/v1/targets", { signal }), [], 5000);
  const c = cluster.data;
  return (
    <>
      <Section
        title="Nodes"
        actions={
          c ? (
            <span class="muted small">
              store time <Time iso={c.storeTime} />
            </span>
          ) : null
        }
      >
        <ErrorBox error={cluster.error} />
        {c ? (
          <table class="list" data-testid="nodes-table">
            <thead>
              <tr>
                <th>Node</th>
                <th>Address</th>
                <th>Shards</th>
                <th>Last heartbeat</th>
              </tr>
            </thead>
            <tbody>
              {c.nodes.map((n) => (
                <tr key={n.nodeId}>
                  <td class="mono">{n.nodeId}</td>
                  <td class="mono">{n.address ?? "—"}</td>
                  <td>{n.shards.length}</td>
                  <td>
                    <Time iso={n.lastHeartbeatAt} /> <span class="muted small">({n.heartbeatAgeSeconds.toFixed(1)} s ago)</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Section>
      {c ? (
        <Section title="Shards">
          <table class="list compact" data-testid="shards-table">
            <thead>
              <tr>
                <th>Shard</th>
                <th>Owner</th>
                <th>Epoch</th>
                <th>Lease left</th>
              </tr>
            </thead>
            <tbody>
              {c.shards.map((s) => (
                <tr key={s.shard} class={s.leaseRemainingSeconds !== null && s.leaseRemainingSeconds < 0 ? "warn" : undefined}>
                  <td>{s.shard}</td>
                  <td class="mono">{s.owner ?? "—"}</td>
                  <td>{s.epoch}</td>
                  <td>{s.leaseRemainingSeconds === null ? "—" : `${s.leaseRemainingSeconds.toFixed(1)} s`}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      ) : null}
      <Section title="HTTP targets">
        <ErrorBox error={targets.error} />
        {targets.data === undefined ? null : targets.data.items.length === 0 ? (
          <p class="muted empty">No origin called in the last ten minutes.</p>
        ) : (
          <table class="list" data-testid="targets-table">
            <thead>
              <tr>
                <th>Origin</th>
                <th>Breaker</th>
                <th>In flight</th>
                <th>Handed back</th>
              </tr>
            </thead>
            <tbody>
              {targets.data.items.map((t) => (
                <tr key={t.origin}>
                  <td class="mono">{t.origin}</td>
                  <td>
                    <span class={`badge breaker-${t.breaker}`}>{t.breaker}</span>
                  </td>
                  <td>{t.inFlight}</td>
                  <td>{typeof t.released === "number" ? t.released : "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>
    </>
  );
}
