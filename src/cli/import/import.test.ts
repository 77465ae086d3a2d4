// Importing crontabs and Kubernetes CronJobs: the plans the importers make
// from each kind of input, case by case.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Target } from "@duetime/sdk/contract";
import { LIMITS } from "../../core/schemas.js";
import { planCrontab, splitPercent } from "./crontab.js";
import { planK8sCronJobs } from "./k8s.js";
import { type ImportPlan, shorten } from "./plan.js";

const QUEUE: Target = { type: "queue", pool: "imports" };
const HTTP: Target = { type: "http", url: "https://runner.example.com/run" };

/** The plan with each idempotencyKey checked for its shape and left out, so the rest can be compared whole. */
function withoutKeys(plan: ImportPlan): ImportPlan {
  return {
    refused: plan.refused,
    jobs: plan.jobs.map(({ job: { idempotencyKey, ...job }, ...planned }) => {
      assert.match(idempotencyKey ?? "", /^import:[0-9a-f]{64}$/);
      return { ...planned, job };
    }),
  };
}

const keys = (plan: ImportPlan) => plan.jobs.map((j) => j.job.idempotencyKey);

const CRON_DEFAULTS = { misfire: "skip", overlap: "allow" } as const;

// A user's crontab (crontab -l), line numbers in the comments of the test below.
const USER_CRONTAB = `# m h dom mon dow command
MAILTO=ops@example.com
SHELL = '/bin/bash'
CRON_TZ=Europe/London
30 2 * * 1-5 /usr/local/bin/backup --full
0 9 * * * mail -s "Daily report" team%Hello team,%%The report: 50\\% done.%
0 0 1 * * tar czf /backup/$(date +\\%Y-\\%m).tgz /srv
@daily /usr/bin/cleanup
@reboot /usr/bin/start-agent
*/15 0 * * * * /usr/bin/poll
61 * * * * /usr/bin/broken
0 3 * *
CRON_TZ=Europe/Londn
15 4 * * * /usr/bin/report
CRON_TZ=
TZ="America/New_York"
45 23 * * 0 /usr/bin/weekly
`;

describe("planCrontab", () => {
  test("a user crontab: variables, CRON_TZ, TZ, %, macros, a 6-field line; @reboot, malformed lines and an unknown zone refused", () => {
    const plan = planCrontab(USER_CRONTAB, { file: "crontab", target: QUEUE });
    const env = { SHELL: "/bin/bash" };
    const base = { source: "crontab", file: "crontab", mailto: "ops@example.com" } as const;
    const job = (line: number, command: string, cron: string, tz: string, extra: Record<string, unknown> = {}, warnings: string[] = []) => ({
      source: `crontab:${line}`,
      job: {
        name: `crontab:${line} ${command}`,
        target: QUEUE,
        payload: { ...base, line, command, env, ...extra },
        schedule: { cron, tz, ...CRON_DEFAULTS },
        retry: { maxAttempts: 1 },
        mode: "dry_run" as const,
      },
      warnings,
    });
    assert.deepEqual(withoutKeys(plan), {
      jobs: [
        job(5, "/usr/local/bin/backup --full", "30 2 * * 1-5", "Europe/London"),
        {
          ...job(6, 'mail -s "Daily report" team', "0 9 * * *", "Europe/London"),
          job: {
            ...job(6, 'mail -s "Daily report" team', "0 9 * * *", "Europe/London").job,
            payload: { ...base, line: 6, command: 'mail -s "Daily report" team', stdin: "Hello team,\n\nThe report: 50% done.\n", env },
          },
        },
        job(7, "tar czf /backup/$(date +%Y-%m).tgz /srv", "0 0 1 * *", "Europe/London"),
        job(8, "/usr/bin/cleanup", "@daily", "Europe/London"),
        job(10, "/usr/bin/poll", "*/15 0 * * * *", "Europe/London", {}, [
          `6 time fields: read as duetime's seconds-first cron "*/15 0 * * * *"; classic cron reads only 5 and would run "* /usr/bin/poll" as the command`,
        ]),
        // CRON_TZ= (empty) on line 15 goes back to the default zone; TZ= on line 16 is the command's only.
        job(17, "/usr/bin/weekly", "45 23 * * 0", "UTC", { env: { SHELL: "/bin/bash", TZ: "America/New_York" } }, [
          "TZ= sets the command's environment, not the schedule's zone (cronie); the schedule is read in UTC; add CRON_TZ= to change it",
        ]),
      ],
      refused: [
        {
          source: "crontab:9",
          reason: "@reboot runs at boot; duetime has no boot event: start it from your service manager (e.g. a systemd unit) instead",
        },
        { source: "crontab:11", reason: 'cron: minute: "61" is out of range 0-59' },
        {
          source: "crontab:12",
          reason: "has 4 fields; a crontab line needs 5 time fields (minute hour day-of-month month day-of-week) and then a command",
        },
        { source: "crontab:14", reason: 'unknown time zone "Europe/Londn" (CRON_TZ= on line 13)' },
      ],
    });
  });

  test("a system crontab: the user column, after a macro too; a line without a user is refused", () => {
    const text = [
      "SHELL=/bin/sh",
      "PATH=/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin",
      "17 * * * * root cd / && run-parts --report /etc/cron.hourly",
      "@weekly backup /usr/local/bin/weekly-backup",
      "25 6 * * * /usr/local/bin/nightly --now",
      "30 6 * * *",
      "*/10 * * * * * www-data /usr/bin/php /srv/app/tick.php",
    ].join("\n");
    const plan = planCrontab(text, { file: "/etc/cron.d/backup", target: HTTP, system: true, defaultTz: "Europe/Berlin", mode: "live" });
    const env = { SHELL: "/bin/sh", PATH: "/usr/local/sbin:/usr/local/bin:/sbin:/bin:/usr/sbin:/usr/bin" };
    const job = (line: number, user: string, command: string, cron: string, warnings: string[] = []) => ({
      source: `/etc/cron.d/backup:${line}`,
      job: {
        name: `backup:${line} ${command}`,
        target: HTTP,
        payload: { source: "crontab", file: "/etc/cron.d/backup", line, command, user, env },
        schedule: { cron, tz: "Europe/Berlin", ...CRON_DEFAULTS },
        retry: { maxAttempts: 1 },
        mode: "live" as const,
      },
      warnings,
    });
    assert.deepEqual(withoutKeys(plan), {
      jobs: [
        job(3, "root", "cd / && run-parts --report /etc/cron.hourly", "17 * * * *"),
        job(4, "backup", "/usr/local/bin/weekly-backup", "@weekly"),
        job(7, "www-data", "/usr/bin/php /srv/app/tick.php", "*/10 * * * * *", [
          `6 time fields: read as duetime's seconds-first cron "*/10 * * * * *"; classic cron reads only 5 and would run "* www-data /usr/bin/php /srv/app/tick.php" as the command`,
        ]),
      ],
      refused: [
        {
          source: "/etc/cron.d/backup:5",
          reason:
            '"/usr/local/bin/nightly" is not a user name: in a system crontab (/etc/crontab, /etc/cron.d) the user comes after the schedule, as in "0 5 * * * root /usr/local/bin/backup"',
        },
        { source: "/etc/cron.d/backup:6", reason: "no user: in a system crontab (/etc/crontab, /etc/cron.d) the user comes after the schedule" },
      ],
    });
  });

  test("the same line in a user crontab is not read as system (the first command word is no user)", () => {
    const plan = planCrontab("25 6 * * * /usr/local/bin/nightly --now\n", { file: "crontab", target: QUEUE });
    assert.deepEqual(
      plan.jobs.map((j) => j.job.payload),
      [{ source: "crontab", file: "crontab", line: 1, command: "/usr/local/bin/nightly --now" }],
    );
  });

  test("more refusals: no command, a command that is all stdin, an unknown default zone, a NUL, a bad macro", () => {
    const text = [
      "@daily",
      "0 5 * * * %only input",
      "0 6 * * * /bin/true",
      "0 7 * * * echo a\u0000b",
      "@fortnightly /bin/true",
      "0 0 30 2 * /bin/never",
    ].join("\n");
    const plan = planCrontab(text, { file: "crontab", target: QUEUE, defaultTz: "Mars/Olympus_Mons" });
    assert.deepEqual(plan, {
      jobs: [],
      refused: [
        { source: "crontab:1", reason: "no command after the schedule" },
        {
          source: "crontab:2",
          reason: "the command is empty: everything after the first unescaped % is the command's input (write \\% for a literal %)",
        },
        { source: "crontab:3", reason: `unknown time zone "Mars/Olympus_Mons" (the crontab's default zone)` },
        {
          source: "crontab:4",
          reason: `unknown time zone "Mars/Olympus_Mons" (the crontab's default zone); the line.command contains a NUL character (U+0000), which duetime cannot store`,
        },
        {
          source: "crontab:5",
          reason:
            'cron: expression: "@fortnightly" is not a known macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly); unknown time zone "Mars/Olympus_Mons" (the crontab\'s default zone)',
        },
        {
          source: "crontab:6",
          reason: `cron: dayOfMonth: "30" can never match a day together with month "2" and day-of-week "*"; unknown time zone "Mars/Olympus_Mons" (the crontab's default zone)`,
        },
      ],
    });
  });

  test("a long command is cut to fit a job name; CRLF line ends; @hourly, @monthly, @yearly, @annually, @midnight", () => {
    const long = `/usr/bin/report ${"--flag ".repeat(60)}--end`;
    const text = [`0 1 * * * ${long}`, "@hourly /bin/a", "@monthly /bin/b", "@yearly /bin/c", "@annually /bin/d", "@midnight /bin/e"].join("\r\n");
    const plan = planCrontab(text, { file: "./conf/crontab.txt", target: QUEUE });
    assert.deepEqual(plan.refused, []);
    const name = plan.jobs[0]!.job.name;
    assert.equal(name.length, LIMITS.nameMaxLength);
    assert.ok(name.startsWith("crontab.txt:1 /usr/bin/report --flag --flag"), name);
    assert.ok(name.endsWith("…"), name);
    assert.equal((plan.jobs[0]!.job.payload as { command: string }).command, long);
    assert.deepEqual(
      plan.jobs.map((j) => [j.source, (j.job.schedule as { cron: string }).cron, (j.job.payload as { command: string }).command]),
      [
        ["./conf/crontab.txt:1", "0 1 * * *", long],
        ["./conf/crontab.txt:2", "@hourly", "/bin/a"],
        ["./conf/crontab.txt:3", "@monthly", "/bin/b"],
        ["./conf/crontab.txt:4", "@yearly", "/bin/c"],
        ["./conf/crontab.txt:5", "@annually", "/bin/d"],
        ["./conf/crontab.txt:6", "@midnight", "/bin/e"],
      ],
    );
  });

  test("a 6th token that is a command, not a time field, stays the command (as cron reads it)", () => {
    const plan = planCrontab("0 5 * * * 7z a /backup/home.7z /home\n", { file: "crontab", target: QUEUE });
    assert.deepEqual(
      plan.jobs.map((j) => [(j.job.schedule as { cron: string }).cron, (j.job.payload as { command: string }).command, j.warnings]),
      [["0 5 * * *", "7z a /backup/home.7z /home", []]],
    );
  });

  test("% as man 5 crontab says: the first unescaped % ends the command, the others are newlines, \\% is a %", () => {
    assert.deepEqual(splitPercent("date +\\%F"), { command: "date +%F" });
    assert.deepEqual(splitPercent("cat%a%b"), { command: "cat", stdin: "a\nb" });
    assert.deepEqual(splitPercent("cat%50\\% off%x\\y"), { command: "cat", stdin: "50% off\nx\\y" });
    assert.deepEqual(splitPercent("echo \\\\%in"), { command: "echo \\\\", stdin: "in" });
    assert.deepEqual(splitPercent("cat%end\\"), { command: "cat", stdin: "end\\" });
  });
});

// Six documents and a List; numbers in the comments.
const CRONJOBS_YAML = `# 1: every mapped field
apiVersion: batch/v1
kind: CronJob
metadata:
  name: backup
  namespace: ops
spec:
  schedule: "30 2 * * 1-5"
  timeZone: Europe/Paris
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: 300
  suspend: true
  successfulJobsHistoryLimit: 3
  jobTemplate:
    spec:
      backoffLimit: 2
      activeDeadlineSeconds: 3600
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: backup
              image: registry.example.com/backup:1.4
              command: ["/bin/backup"]
              args: ["--full", "--to=s3://backups"]
              env:
                - name: LEVEL
                  value: full
                - name: EMPTY
                - name: PASSWORD
                  valueFrom:
                    secretKeyRef: { name: backup, key: password }
              envFrom:
                - configMapRef: { name: backup-config }
            - name: sidecar
              image: busybox:1.36
---
# 2: a List of two (kubectl get cronjobs -o yaml)
apiVersion: v1
kind: List
items:
  - apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: report
    spec:
      schedule: "@hourly"
      jobTemplate:
        spec:
          template:
            spec:
              containers:
                - name: report
                  image: report:2
  - apiVersion: batch/v1beta1
    kind: CronJob
    metadata:
      name: cleanup
      namespace: ops
    spec:
      schedule: "0 0 * * *"
      concurrencyPolicy: Replace
      startingDeadlineSeconds: 0
      jobTemplate:
        spec:
          backoffLimit: 0
          template:
            spec:
              containers:
                - name: cleanup
                  image: cleanup:1
                  args: [--older-than, 30d]
---
# 3
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
---
# 4
apiVersion: batch/v1
kind: CronJob
metadata:
  name: no-schedule
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: a, image: a }]
---
# 5
apiVersion: batch/v1
kind: CronJob
metadata:
  name: mars
spec:
  schedule: "0 6 * * *"
  timeZone: Mars/Olympus_Mons
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: a, image: a }]
---
# 6
apiVersion: batch/v1
kind: CronJob
metadata:
  name: paris
spec:
  schedule: "CRON_TZ=Europe/Paris 0 6 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: a, image: a }]
---
# 7
apiVersion: batch/v1
kind: CronJob
metadata:
  name: sometimes
spec:
  schedule: "0 6 * * *"
  concurrencyPolicy: Sometimes
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: a, image: a }]
---
# 8: a syntax error (the flow sequence is never closed)
apiVersion: batch/v1
kind: CronJob
metadata:
  name: broken
  labels: [team
spec:
  schedule: "0 6 * * *"
---
# 9: the documents after an error are still read
apiVersion: batch/v1
kind: CronJob
metadata:
  name: after-error
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: a, image: a }]
`;

describe("planK8sCronJobs", () => {
  test("every mapped field; a List; a Deployment, a missing schedule, an unknown zone, CRON_TZ=, a bad concurrencyPolicy and a YAML error refused", () => {
    const plan = planK8sCronJobs(CRONJOBS_YAML, { file: "cronjobs.yaml", target: HTTP });
    assert.deepEqual(withoutKeys(plan), {
      jobs: [
        {
          source: "cronjobs.yaml#1 backup",
          job: {
            name: "ops/backup",
            target: HTTP,
            payload: {
              source: "k8s-cronjob",
              file: "cronjobs.yaml",
              document: 1,
              name: "backup",
              namespace: "ops",
              containers: [
                {
                  name: "backup",
                  image: "registry.example.com/backup:1.4",
                  command: ["/bin/backup"],
                  args: ["--full", "--to=s3://backups"],
                  env: { LEVEL: "full", EMPTY: "" },
                },
                { name: "sidecar", image: "busybox:1.36" },
              ],
            },
            schedule: { cron: "30 2 * * 1-5", tz: "Europe/Paris", misfire: "skip", misfireThresholdSeconds: 300, overlap: "forbid" },
            retry: { maxAttempts: 3, backoffSeconds: 10, maxBackoffSeconds: 360 },
            timeoutSeconds: 3600,
            mode: "dry_run",
          },
          warnings: [
            "container backup: env PASSWORD comes from valueFrom (secretKeyRef) and was left out; give the worker that value another way",
            "container backup: envFrom (variables from ConfigMaps and Secrets) was left out; give the worker those values another way",
          ],
          paused: true,
        },
        {
          source: "cronjobs.yaml#2.1 report",
          job: {
            name: "default/report",
            target: HTTP,
            payload: {
              source: "k8s-cronjob",
              file: "cronjobs.yaml",
              document: 2,
              item: 1,
              name: "report",
              containers: [{ name: "report", image: "report:2" }],
            },
            // No timeZone, concurrencyPolicy, startingDeadlineSeconds or backoffLimit: Kubernetes' defaults.
            schedule: { cron: "@hourly", tz: "UTC", misfire: "run_once", overlap: "allow" },
            retry: { maxAttempts: 7, backoffSeconds: 10, maxBackoffSeconds: 360 },
            mode: "dry_run",
          },
          warnings: [],
        },
        {
          source: "cronjobs.yaml#2.2 cleanup",
          job: {
            name: "ops/cleanup",
            target: HTTP,
            payload: {
              source: "k8s-cronjob",
              file: "cronjobs.yaml",
              document: 2,
              item: 2,
              name: "cleanup",
              namespace: "ops",
              containers: [{ name: "cleanup", image: "cleanup:1", args: ["--older-than", "30d"] }],
            },
            schedule: { cron: "0 0 * * *", tz: "UTC", misfire: "skip", misfireThresholdSeconds: 1, overlap: "replace" },
            retry: { maxAttempts: 1, backoffSeconds: 10, maxBackoffSeconds: 360 },
            mode: "dry_run",
          },
          warnings: ["spec.startingDeadlineSeconds 0 is read as 1 second, duetime's smallest misfire threshold"],
        },
        {
          source: "cronjobs.yaml#9 after-error",
          job: {
            name: "default/after-error",
            target: HTTP,
            payload: { source: "k8s-cronjob", file: "cronjobs.yaml", document: 9, name: "after-error", containers: [{ name: "a", image: "a" }] },
            schedule: { cron: "*/5 * * * *", tz: "UTC", misfire: "run_once", overlap: "allow" },
            retry: { maxAttempts: 7, backoffSeconds: 10, maxBackoffSeconds: 360 },
            mode: "dry_run",
          },
          warnings: [],
        },
      ],
      refused: [
        { source: "cronjobs.yaml#3 web", reason: "kind Deployment is not a CronJob" },
        { source: "cronjobs.yaml#4 no-schedule", reason: "spec.schedule is missing" },
        { source: "cronjobs.yaml#5 mars", reason: 'unknown time zone "Mars/Olympus_Mons" (spec.timeZone)' },
        {
          source: "cronjobs.yaml#6 paris",
          reason:
            'spec.schedule "CRON_TZ=Europe/Paris 0 6 * * *" sets its zone with CRON_TZ=, which Kubernetes rejects: set spec.timeZone: Europe/Paris and remove CRON_TZ= from the schedule',
        },
        { source: "cronjobs.yaml#7 sometimes", reason: 'spec.concurrencyPolicy "Sometimes" is not Allow, Forbid or Replace' },
        {
          source: "cronjobs.yaml#8",
          reason: "YAML: Flow sequence in block collection must be sufficiently indented and end with a ] at line 141, column 1",
        },
      ],
    });
  });

  test("more refusals: TZ=, @every, 6 fields, a bad cron, apiVersion, no name, no containers, no image, a number in env, bad numbers, not an object", () => {
    const cronJob = (name: string, spec: string, containers = "[{ name: a, image: a }]", apiVersion = "batch/v1") => `apiVersion: ${apiVersion}
kind: CronJob
metadata:
  name: ${name}
spec:
${spec}
  jobTemplate:
    spec:
      template:
        spec:
          containers: ${containers}
`;
    const docs = [
      cronJob("tz", '  schedule: "TZ=UTC 0 6 * * *"'),
      cronJob("every", '  schedule: "@every 1h"'),
      cronJob("six", '  schedule: "0 0 6 * * *"'),
      cronJob("bad-cron", '  schedule: "0 25 * * *"'),
      cronJob("old", '  schedule: "0 6 * * *"', undefined, "batch/v2alpha1"),
      'apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  generateName: gen-\nspec:\n  schedule: "0 6 * * *"\n',
      cronJob("empty", '  schedule: "0 6 * * *"', "[]"),
      cronJob("imageless", '  schedule: "0 6 * * *"', "[{ name: a }]"),
      cronJob("port", '  schedule: "0 6 * * *"', "[{ name: a, image: a, env: [{ name: PORT, value: 8080 }] }]"),
      cronJob("numbers", '  schedule: "0 6 * * *"\n  startingDeadlineSeconds: -5\n  suspend: "yes"\n  timeZone: 1'),
      cronJob("limits", '  schedule: "0 6 * * *"').replace(
        "    spec:\n      template",
        "    spec:\n      backoffLimit: -1\n      activeDeadlineSeconds: 0\n      template",
      ),
      "- just\n- a list\n",
      "kind: CronJob\napiVersion: batch/v1\nmetadata: { name: *undefined-anchor }\n",
      "# only a comment: an empty document is skipped\n",
    ];
    const plan = planK8sCronJobs(docs.join("---\n"), { file: "more.yaml", target: QUEUE });
    assert.deepEqual(plan, {
      jobs: [],
      refused: [
        {
          source: "more.yaml#1 tz",
          reason:
            'spec.schedule "TZ=UTC 0 6 * * *" sets its zone with TZ=, which Kubernetes rejects: set spec.timeZone: UTC and remove TZ= from the schedule',
        },
        {
          source: "more.yaml#2 every",
          reason: 'spec.schedule "@every 1h" is an interval (@every), not a time of day: write it as a cron expression',
        },
        {
          source: "more.yaml#3 six",
          reason: 'spec.schedule "0 0 6 * * *" has 6 fields; Kubernetes reads 5 (minute hour day-of-month month day-of-week) and rejects it',
        },
        { source: "more.yaml#4 bad-cron", reason: 'cron: hour: "25" is out of range 0-23' },
        { source: "more.yaml#5 old", reason: "apiVersion batch/v2alpha1 is not batch/v1 or batch/v1beta1" },
        { source: "more.yaml#6", reason: "metadata.name is missing (generateName is not supported: a job needs a stable name)" },
        { source: "more.yaml#7 empty", reason: "spec.jobTemplate.spec.template.spec.containers is missing: a CronJob runs at least one container" },
        { source: "more.yaml#8 imageless", reason: "container a has no image" },
        {
          source: "more.yaml#9 port",
          reason: "container a: env PORT must be a string (quote it in the YAML); Kubernetes rejects numbers and booleans there",
        },
        {
          source: "more.yaml#10 numbers",
          reason:
            'spec.timeZone must be a string; spec.startingDeadlineSeconds must be a whole number of seconds >= 0, got -5; spec.suspend must be true or false, got "yes"',
        },
        {
          source: "more.yaml#11 limits",
          reason:
            "spec.jobTemplate.spec.backoffLimit must be a whole number >= 0, got -1; spec.jobTemplate.spec.activeDeadlineSeconds must be a whole number of seconds >= 1, got 0",
        },
        { source: "more.yaml#12", reason: "not a Kubernetes object (a mapping with apiVersion, kind, metadata and spec)" },
        {
          source: "more.yaml#13",
          reason: "YAML: Unresolved alias (the anchor must be set before the alias): undefined-anchor (the document from line 136)",
        },
      ],
    });
  });

  test("a CronJobList from the API (items without kind), clamped limits, and the same CronJob twice: the last one wins", () => {
    const text = `apiVersion: batch/v1
kind: CronJobList
items:
  - metadata: { name: nightly, namespace: data }
    spec:
      schedule: "0 1 * * *"
      startingDeadlineSeconds: 99999999
      jobTemplate:
        spec:
          backoffLimit: 5000
          activeDeadlineSeconds: 172800
          template:
            spec:
              containers: [{ name: etl, image: etl:3 }]
---
apiVersion: batch/v1
kind: CronJob
metadata: { name: nightly, namespace: data }
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{ name: etl, image: etl:4 }]
`;
    const plan = planK8sCronJobs(text, { file: "cj.yaml", target: QUEUE, mode: "live" });
    const first = planK8sCronJobs(text.split("---\n")[0]!, { file: "cj.yaml", target: QUEUE });
    assert.deepEqual(withoutKeys(first), {
      jobs: [
        {
          source: "cj.yaml#1.1 nightly",
          job: {
            name: "data/nightly",
            target: QUEUE,
            payload: {
              source: "k8s-cronjob",
              file: "cj.yaml",
              document: 1,
              item: 1,
              name: "nightly",
              namespace: "data",
              containers: [{ name: "etl", image: "etl:3" }],
            },
            schedule: { cron: "0 1 * * *", tz: "UTC", misfire: "skip", misfireThresholdSeconds: LIMITS.misfireThresholdSecondsMax, overlap: "allow" },
            retry: { maxAttempts: LIMITS.maxAttemptsMax, backoffSeconds: 10, maxBackoffSeconds: 360 },
            timeoutSeconds: LIMITS.timeoutSecondsMax,
            mode: "dry_run",
          },
          warnings: [
            "spec.startingDeadlineSeconds 99999999 is more than a year; the misfire threshold is 31536000 s (a year)",
            "spec.jobTemplate.spec.backoffLimit 5000 allows more attempts than duetime's 1000; maxAttempts is 1000",
            "spec.jobTemplate.spec.activeDeadlineSeconds 172800 is longer than duetime's longest timeout; the timeout is 86400 s (a day)",
          ],
        },
      ],
      refused: [],
    });
    assert.deepEqual(
      plan.jobs.map((j) => [j.source, j.job.mode, (j.job.schedule as { cron: string }).cron]),
      [["cj.yaml#2 nightly", "live", "0 2 * * *"]],
    );
    // The winner's key is the one it has when the file holds only it, even when the two are the same.
    const second = text.split("---\n")[1]!;
    assert.deepEqual(keys(plan), keys(planK8sCronJobs(second, { file: "cj.yaml", target: QUEUE })));
    const twice = planK8sCronJobs(`${second}---\n${second}`, { file: "cj.yaml", target: QUEUE });
    assert.deepEqual(keys(twice), keys(planK8sCronJobs(second, { file: "cj.yaml", target: QUEUE })));
    assert.deepEqual(twice.refused, [
      { source: "cj.yaml#1 nightly", reason: "replaced by cj.yaml#2 nightly: the same CronJob (data/nightly); kubectl apply keeps the last" },
    ]);
    assert.deepEqual(plan.refused, [
      { source: "cj.yaml#1.1 nightly", reason: "replaced by cj.yaml#2 nightly: the same CronJob (data/nightly); kubectl apply keeps the last" },
    ]);
  });

  test("a List item that is not a CronJob is refused on its own; an empty input plans nothing", () => {
    const text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: v1\n    kind: ConfigMap\n    metadata: { name: settings }\n";
    assert.deepEqual(planK8sCronJobs(text, { file: "l.yaml", target: QUEUE }), {
      jobs: [],
      refused: [{ source: "l.yaml#1.1 settings", reason: "kind ConfigMap is not a CronJob" }],
    });
    assert.deepEqual(planK8sCronJobs("", { file: "e.yaml", target: QUEUE }), { jobs: [], refused: [] });
    assert.deepEqual(planK8sCronJobs("apiVersion: v1\nkind: List\n", { file: "e.yaml", target: QUEUE }), {
      jobs: [],
      refused: [{ source: "e.yaml#1", reason: "kind List has no items" }],
    });
  });
});

describe("idempotency keys", () => {
  test("crontab: the same input gives the same keys; a changed schedule, command, target or zone changes that job's key only", () => {
    const options = { file: "crontab", target: QUEUE };
    const text = "0 1 * * * /bin/a\n0 2 * * * /bin/b\n";
    const once = keys(planCrontab(text, options));
    assert.equal(new Set(once).size, 2);
    assert.deepEqual(keys(planCrontab(text, options)), once);

    const schedule = keys(planCrontab("0 1 * * * /bin/a\n0 3 * * * /bin/b\n", options));
    assert.equal(schedule[0], once[0]);
    assert.notEqual(schedule[1], once[1]);
    const command = keys(planCrontab("0 1 * * * /bin/a\n0 2 * * * /bin/b -v\n", options));
    assert.equal(command[0], once[0]);
    assert.notEqual(command[1], once[1]);
    const zone = keys(planCrontab(text, { ...options, defaultTz: "Europe/London" }));
    assert.notEqual(zone[0], once[0]);
    const target = keys(planCrontab(text, { ...options, target: { type: "queue", pool: "other" } }));
    assert.notEqual(target[0], once[0]);
    const env = keys(planCrontab(`MAILTO=me@example.com\n${text}`, options));
    assert.notEqual(env[0], once[0]);
    const otherFile = keys(planCrontab(text, { ...options, file: "crontab.old" }));
    assert.notEqual(otherFile[0], once[0]);
  });

  test("crontab: positions, the file's directory and the mode are not in the key; two identical lines are two jobs", () => {
    const options = { file: "crontab", target: QUEUE };
    const once = keys(planCrontab("0 1 * * * /bin/a\n", options));
    // A comment added above moves the line but does not make it a new job.
    assert.deepEqual(keys(planCrontab("# nightly\n\n0 1 * * * /bin/a\n", options)), once);
    assert.deepEqual(keys(planCrontab("0 1 * * * /bin/a\n", { ...options, file: "backups/crontab" })), once);
    assert.deepEqual(keys(planCrontab("0 1 * * * /bin/a\n", { ...options, mode: "live" })), once);
    const twice = keys(planCrontab("0 1 * * * /bin/a\n0 1 * * * /bin/a\n", options));
    assert.equal(twice[0], once[0]);
    assert.notEqual(twice[1], twice[0]);
  });

  test("k8s: the same input gives the same keys; a changed schedule, image, backoffLimit or namespace changes the key", () => {
    const cronJob = (schedule: string, extra = "") => `apiVersion: batch/v1
kind: CronJob
metadata: { name: backup${extra.includes("namespace") ? ", namespace: ops" : ""} }
spec:
  schedule: "${schedule}"
  jobTemplate:
    spec:
${extra.includes("backoff") ? "      backoffLimit: 1\n" : ""}      template:
        spec:
          containers: [{ name: b, image: ${extra.includes("image") ? "b:2" : "b:1"} }]
`;
    const options = { file: "cj.yaml", target: QUEUE };
    const once = keys(planK8sCronJobs(cronJob("0 1 * * *"), options));
    assert.equal(once.length, 1);
    assert.deepEqual(keys(planK8sCronJobs(cronJob("0 1 * * *"), options)), once);
    // The same CronJob as document 2 (after another one) keeps its key.
    const moved = keys(planK8sCronJobs(`${CRONJOBS_YAML.split("---\n")[8]}---\n${cronJob("0 1 * * *")}`, options));
    assert.equal(moved[1], once[0]);
    for (const changed of [cronJob("0 2 * * *"), cronJob("0 1 * * *", "image"), cronJob("0 1 * * *", "backoff"), cronJob("0 1 * * *", "namespace")]) {
      const other = keys(planK8sCronJobs(changed, options));
      assert.equal(other.length, 1);
      assert.notEqual(other[0], once[0]);
    }
  });
});

describe("shorten", () => {
  test("fits the limit without splitting a surrogate pair, and leaves short text alone", () => {
    assert.equal(shorten("a  b\tc", 10), "a b c");
    const cut = shorten(`ab${"😀".repeat(10)}`, 7);
    assert.equal(cut, "ab😀😀…");
    assert.ok(cut.length <= 7);
  });
});
