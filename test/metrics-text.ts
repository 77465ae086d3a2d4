// A small parser of the Prometheus text exposition format (version 0.0.4),
// for tests that check /metrics values: every sample with its labels, and
// each metric family's TYPE.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  samples: Sample[];
  /** Metric family name → type (counter, gauge, histogram, summary, untyped). */
  types: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    if (line.startsWith("#")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`line ${i + 1} is not a sample: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? "";
    LABEL.lastIndex = 0;
    while (LABEL.lastIndex < body.length) {
      const start = LABEL.lastIndex;
      const l = LABEL.exec(body);
      if (!l || LABEL.lastIndex === start) throw new Error(`line ${i + 1}: bad labels ${JSON.stringify(body)}`);
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    }
    const value = m[3] === "+Inf" ? Number.POSITIVE_INFINITY : m[3] === "-Inf" ? Number.NEGATIVE_INFINITY : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== "NaN") throw new Error(`line ${i + 1}: bad value ${m[3]}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

/** The samples of one series name whose labels include `match`. */
export function find(e: Exposition, name: string, match: Record<string, string> = {}): Sample[] {
  return e.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}

/** The value of the one sample that matches; undefined when none does; throws when several do. */
export function value(e: Exposition, name: string, match: Record<string, string> = {}): number | undefined {
  const found = find(e, name, match);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(match)}`);
  return found[0]?.value;
}

/** The metric family names a scrape exposes (histograms by their base name). */
export function familyNames(e: Exposition): Set<string> {
  return new Set(e.types.keys());
}
