// duetime's cron module: parsing, next fire times with the DST rule, zones.
export { CronSyntaxError, parseCron, hashOffset } from "./parse.js";
export type { CronExpression, CronField, NthWeekday, ParseOptions } from "./parse.js";
export { nextFireTime, fireTimes, HORIZON_MS, REACH_MS } from "./next.js";
export type { FireTime } from "./next.js";
export { isValidTimeZone } from "./zone.js";
