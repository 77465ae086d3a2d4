// The dashboard's shell: it asks the server who it is (GET /v1/whoami) before
// anything else; a server without keys answers and the page the hash names
// opens at once. Only a 401 shows the login form (a key kept in
// sessionStorage only), and the hash is kept through it. Then the navigation
// the key's role may use, and the page.

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import "uplot/dist/uPlot.min.css";
import "./styles.css";
import type { WhoAmI } from "@duetime/sdk/contract";
import { ApiError, api, describeError, forgetKey, onUnauthenticated, storedKey, storeKey } from "./api";
import { ErrorBox } from "./components";
import { ClusterPage } from "./pages/Cluster";
import { DeadLettersPage } from "./pages/DeadLetters";
import { DuplicatesPage } from "./pages/Duplicates";
import { JobPage } from "./pages/Job";
import { JobsPage } from "./pages/Jobs";
import { NewJobPage } from "./pages/NewJob";
import { OverviewPage } from "./pages/Overview";
import { href, useRoute } from "./router";
import { type Ability, may, SessionContext } from "./session";
import { browserZone } from "./time";

function Login({ onLogin, notice }: { onLogin: (key: string, who: WhoAmI) => void; notice: string | undefined }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const typed = key.trim();
    try {
      // Every valid key may ask who it is; the answer decides what the pages offer.
      onLogin(typed, await api<WhoAmI>("GET", "/v1/whoami", { key: typed }));
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="login">
      <form class="card" onSubmit={submit}>
        <h1>duetime</h1>
        <p>This server asks for an API key. It is kept in this tab's session storage only and sent as a Bearer token.</p>
        <label>
          API key
          <input
            type="password"
            name="apiKey"
            autoComplete="off"
            placeholder="dtk_…"
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          />
        </label>
        {error ? (
          <div class="error" role="alert">
            {error}
          </div>
        ) : null}
        <button type="submit" disabled={busy}>
          {busy ? "Checking…" : "Log in"}
        </button>
      </form>
    </main>
  );
}

/** The pages: hash segment, tab label, what the key needs to see it. */
const NAV: [string, string, Ability][] = [
  ["overview", "Overview", "stats"],
  ["jobs", "Jobs", "jobs"],
  ["new", "New job", "jobs"],
  ["duplicates", "Possible duplicates", "jobs"],
  ["dead-letters", "Dead letters", "jobs"],
  ["cluster", "Cluster", "cluster"],
];

function Page({ who }: { who: WhoAmI }) {
  const route = useRoute();
  const nav = NAV.filter(([, , ability]) => may(who, ability));
  const home = may(who, "jobs") ? "jobs" : (nav[0]?.[0] ?? "jobs");
  const [first = home, second] = route.path;
  const entry = NAV.find(([id]) => id === first);
  let page = <JobsPage query={route.query} />;
  // A page the role may not read is not rendered at all: its requests would only answer 403.
  if (entry !== undefined && !may(who, entry[2])) {
    page = <ErrorBox error={`A ${who.role} key may not see "${entry[1]}". Pick a page above, or log in with another key.`} />;
  } else if (first === "jobs" && second !== undefined) page = <JobPage key={second} jobId={second} />;
  else if (first === "overview") page = <OverviewPage />;
  else if (first === "new") page = <NewJobPage />;
  else if (first === "duplicates") page = <DuplicatesPage query={route.query} />;
  else if (first === "dead-letters") page = <DeadLettersPage query={route.query} />;
  else if (first === "cluster") page = <ClusterPage />;
  else if (!may(who, "jobs")) page = <ErrorBox error={`A ${who.role} key may not list jobs. Pick a page above.`} />;
  const current = entry !== undefined ? first : "jobs";
  return (
    <>
      <nav class="tabs">
        {nav.map(([id, label]) => (
          <a key={id} href={href([id])} class={current === id ? "active" : undefined} aria-current={current === id ? "page" : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <main>{page}</main>
    </>
  );
}

/** Where the session stands: asking who we are, asking for a key, or in (with or without a key). */
type Auth = { at: "asking" } | { at: "login"; notice?: string } | { at: "in"; who: WhoAmI } | { at: "unreachable"; error: unknown };

function App() {
  const [auth, setAuth] = useState<Auth>({ at: "asking" });
  useEffect(
    () =>
      onUnauthenticated((err) => {
        forgetKey();
        setAuth({ at: "login", notice: describeError(err) });
      }),
    [],
  );
  // Ask first, with the key kept from before a reload if any: a server without keys answers without one.
  useEffect(() => {
    if (auth.at !== "asking") return;
    const key = storedKey() ?? "";
    api<WhoAmI>("GET", "/v1/whoami", { key }).then(
      (who) => setAuth({ at: "in", who }),
      (err) => {
        if (!(err instanceof ApiError && err.status === 401)) return setAuth({ at: "unreachable", error: err });
        forgetKey();
        // No key sent: the server needs one, nothing went wrong. A kept key refused: say so.
        setAuth(key === "" ? { at: "login" } : { at: "login", notice: describeError(err) });
      },
    );
  }, [auth]);
  if (auth.at === "asking") return <p class="muted">Connecting…</p>;
  if (auth.at === "login") {
    return (
      <Login
        notice={auth.notice}
        onLogin={(typed, who) => {
          storeKey(typed);
          setAuth({ at: "in", who });
        }}
      />
    );
  }
  const who = auth.at === "in" ? auth.who : undefined;
  return (
    <div class="shell">
      <header class="top">
        <a class="brand" href={href([])}>
          duetime
        </a>
        {who ? (
          <span class="who" data-testid="whoami" title={who.keyId ?? "no API key (development mode)"}>
            <span class="badge">{who.role}</span> {who.tenantId === "*" ? "every tenant" : `tenant ${who.tenantId}`}
          </span>
        ) : null}
        <span class="muted" title="Times are shown in this time zone; hover a time for UTC">
          {browserZone}
        </span>
        {/* A server without keys has nobody to log out (keyId null: no key in use). */}
        {who?.keyId ? (
          <button
            type="button"
            class="link"
            onClick={() => {
              forgetKey();
              // The next key may belong to another tenant or role: start again from its first page.
              history.replaceState(null, "", window.location.pathname);
              setAuth({ at: "login" });
            }}
          >
            Log out
          </button>
        ) : null}
      </header>
      {auth.at === "unreachable" ? (
        <main>
          <ErrorBox error={auth.error} />
          <button type="button" onClick={() => setAuth({ at: "asking" })}>
            Try again
          </button>
        </main>
      ) : null}
      {who ? (
        <SessionContext.Provider value={who}>
          <Page who={who} />
        </SessionContext.Provider>
      ) : null}
    </div>
  );
}

render(<App />, document.getElementById("app")!);
