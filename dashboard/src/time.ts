// Times: shown in the browser's time zone, with UTC on hover (the title).

/** Date and time to the second, two digits a field: every format here. */
const FIELDS = { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" } as const;

const local = new Intl.DateTimeFormat(undefined, { ...FIELDS, hour12: false, timeZoneName: "short" });

export const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;

export function localTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : local.format(d);
}

export function utcTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? iso
    : `${d
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d{3}Z$/, "")} UTC`;
}

/** "in 3 min", "12 s ago". */
export function relative(iso: string, now = Date.now()): string {
  const ms = new Date(iso).getTime() - now;
  if (Number.isNaN(ms)) return "";
  const abs = Math.abs(ms);
  const text =
    abs < 60_000
      ? `${Math.round(abs / 1000)} s`
      : abs < 3_600_000
        ? `${Math.round(abs / 60_000)} min`
        : abs < 172_800_000
          ? `${Math.round(abs / 3_600_000)} h`
          : `${Math.round(abs / 86_400_000)} d`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

const zoned = new Map<string, Intl.DateTimeFormat>();

/** The wall time of `iso` in the IANA zone `tz`, "YYYY-MM-DD HH:mm:ss" (the browser's zone data). */
export function wallTime(iso: string, tz: string): string {
  let format = zoned.get(tz);
  if (format === undefined) {
    format = new Intl.DateTimeFormat("en-US", { ...FIELDS, timeZone: tz, hourCycle: "h23" });
    zoned.set(tz, format);
  }
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const part = Object.fromEntries(format.formatToParts(d).map((p) => [p.type, p.value]));
  return `${part.year}-${part.month}-${part.day} ${part.hour}:${part.minute}:${part.second}`;
}
