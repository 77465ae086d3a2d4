// Dead letters: executions that exhausted their retries or failed for good;
// inspect one (its last error and payload) and replay it, or select several
// and replay them at a rate as one bulk replay whose progress is shown
// (POST /v1/dead-letters:replay, then its GET). Replays need the role admin:
// other keys see the list only.

import { Fragment } from "preact";
import { useState } from "preact/hooks";
import type { DeadLetter, DeadLetterReplay, Page } from "@duetime/sdk/contract";
import { api } from "../api";
import { ErrorBox, Json, Section, StateBadge, Time, useLoad } from "../components";
import { href, navigate } from "../router";
import { may, useSession } from "../session";

/** A bulk replay's progress, polled until it ends. */
function ReplayProgress({ replayId, onEnded }: { replayId: string; onEnded: () => void }) {
  const [cancelError, setCancelError] = useState<unknown>(undefined);
  const [ended, setEnded] = useState(false);
  const replay = useLoad(
    async (signal) => {
      const r = await api<DeadLetterReplay>("GET", `/v1/dead-letters/replays/${encodeURIComponent(replayId)}`, { signal });
      if (r.state !== "RUNNING" && !ended) {
        setEnded(true);
        onEnded();
      }
      return r;
    },
    [replayId],
    ended ? undefined : 1000,
  );
  const r = replay.data;
  return (
    <div class="replay" data-testid="replay-progress" aria-live="polite">
      <ErrorBox error={replay.error ?? cancelError} />
      {r ? (
        <>
          <strong>Replay {r.replayId}</strong> <StateBadge state={r.state} />{" "}
          <span>
            {r.replayed} of {r.total ?? "?"} replayed
            {r.skipped > 0 ? `, ${r.skipped} skipped (no longer dead)` : ""}, at {r.ratePerSecond}/s
          </span>
          {r.state === "RUNNING" ? (
            <button
              type="button"
              class="danger"
              onClick={() =>
                api("POST", `/v1/dead-letters/replays/${encodeURIComponent(replayId)}:cancel`, { body: {} }).then(replay.reload, setCancelError)
              }
            >
              Stop the replay
            </button>
          ) : null}
        </>
      ) : (
        <span class="muted">Starting the replay…</span>
      )}
    </div>
  );
}

function Replay({ item, onDone }: { item: DeadLetter; onDone: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <>
      <button
        type="button"
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          setError(undefined);
          try {
            await api("POST", `/v1/dead-letters/${encodeURIComponent(item.executionId)}:replay`, { body: {} });
            onDone();
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        Replay
      </button>
      <ErrorBox error={error} />
    </>
  );
}

export function DeadLettersPage({ query }: { query: URLSearchParams }) {
  const cursor = query.get("cursor") ?? "";
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [replayed, setReplayed] = useState<string | undefined>(undefined);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [rate, setRate] = useState("10");
  const [bulkError, setBulkError] = useState<unknown>(undefined);
  const [replayId, setReplayId] = useState<string | undefined>(undefined);
  const admin = may(useSession(), "replay");
  const list = useLoad((signal) => api<Page<DeadLetter>>("GET", "/v1/dead-letters", { query: { cursor, limit: 50 }, signal }), [cursor], 10_000);
  const shown = list.data?.items ?? [];
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };
  const allShown = shown.length > 0 && shown.every((item) => selected.has(item.executionId));
  const replaySelected = async () => {
    setBulkError(undefined);
    try {
      const ids = shown.map((item) => item.executionId).filter((id) => selected.has(id));
      const replay = await api<DeadLetterReplay>("POST", "/v1/dead-letters:replay", {
        body: { executionIds: ids, ratePerSecond: Number(rate) },
      });
      setSelected(new Set());
      setReplayId(replay.replayId);
    } catch (err) {
      setBulkError(err);
    }
  };
  return (
    <Section
      title="Dead letters"
      actions={
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      }
    >
      {replayed ? (
        <p class="notice" role="status">
          Replayed {replayed}: a new attempt is queued.
        </p>
      ) : null}
      {replayId ? <ReplayProgress key={replayId} replayId={replayId} onEnded={list.reload} /> : null}
      {admin && shown.length > 0 ? (
        <div class="filters">
          <label>
            Rate (replays per second)
            <input
              type="number"
              name="rate"
              min="0.01"
              max="10000"
              step="any"
              value={rate}
              onInput={(e) => setRate((e.target as HTMLInputElement).value)}
            />
          </label>
          <button type="button" disabled={selected.size === 0 || !(Number(rate) > 0)} onClick={replaySelected}>
            Replay selected ({selected.size})
          </button>
        </div>
      ) : null}
      <ErrorBox error={bulkError} />
      <ErrorBox error={list.error} />
      {list.data === undefined ? null : list.data.items.length === 0 ? (
        <p class="muted empty">No dead letters.</p>
      ) : (
        <table class="list" data-testid="dead-letters-table">
          <thead>
            <tr>
              {admin ? (
                <th>
                  <input
                    type="checkbox"
                    aria-label="Select every dead letter of this page"
                    checked={allShown}
                    onChange={() => setSelected(allShown ? new Set() : new Set(shown.map((item) => item.executionId)))}
                  />
                </th>
              ) : null}
              <th>Job</th>
              <th>Scheduled for</th>
              <th>Attempts</th>
              <th>Dead since</th>
              <th>Last error</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((item) => (
              <Fragment key={item.executionId}>
                <tr>
                  {admin ? (
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select ${item.name} ${item.executionId}`}
                        checked={selected.has(item.executionId)}
                        onChange={() => toggle(item.executionId)}
                      />
                    </td>
                  ) : null}
                  <td>
                    <a href={href(["jobs", item.jobId])}>{item.name}</a>
                    <div class="muted small mono">{item.executionId}</div>
                  </td>
                  <td>
                    <Time iso={item.scheduledFor} />
                  </td>
                  <td>{item.attempts}</td>
                  <td>
                    <Time iso={item.deadAt} rel />
                  </td>
                  <td class="small error-text">
                    {typeof item.lastError === "object" && item.lastError !== null && "message" in item.lastError
                      ? String((item.lastError as { message: unknown }).message)
                      : JSON.stringify(item.lastError)}
                  </td>
                  <td class="nowrap">
                    <button type="button" class="link" onClick={() => setOpen(open === item.executionId ? undefined : item.executionId)}>
                      {open === item.executionId ? "Hide" : "Inspect"}
                    </button>
                    {admin ? (
                      <Replay
                        item={item}
                        onDone={() => {
                          setReplayed(item.executionId);
                          list.reload();
                        }}
                      />
                    ) : null}
                  </td>
                </tr>
                {open === item.executionId ? (
                  <tr class="detail">
                    <td colSpan={admin ? 7 : 6}>
                      <Json value={{ lastError: item.lastError, payload: item.payload }} />
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button type="button" disabled={cursor === ""} onClick={() => navigate(href(["dead-letters"]))}>
          First page
        </button>
        <button
          type="button"
          disabled={!list.data?.nextCursor}
          onClick={() => navigate(href(["dead-letters"], { cursor: list.data?.nextCursor ?? undefined }))}
        >
          Next →
        </button>
      </div>
    </Section>
  );
}
