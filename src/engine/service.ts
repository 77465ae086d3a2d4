// The engine's service layer: what the HTTP server and the embedded client
// call. Every method takes the caller's context (tenant and roles), checks
// permissions and semantics (cron, zones, cross-field rules), and speaks the
// wire types of core/api.ts. Shape validation (types, ranges, unknown
// fields) happens first, against core/schemas.ts.

import type {
  AckItem,
  ApiKeyInfo,
  AuditItem,
  BackfillRequest,
  BackfillResponse,
  ClusterView,
  JobPatch,
  OccurrenceItem,
  OccurrencesQuery,
  BatchCreateItem,
  BatchCreateResult,
  CompleteItem,
  CompleteResponse,
  CreatedJob,
  CreatedKey,
  CreateKeyRequest,
  DeadLetter,
  ErrorRecord,
  ExecutionItem,
  FailItem,
  FailResponse,
  HeartbeatRequest,
  HeartbeatResponse,
  Job,
  JobSpec,
  LeaseRequest,
  LeaseResponse,
  ListJobsQuery,
  ListKeysQuery,
  Page,
  PageQuery,
  PoolStats,
  PreviewQuery,
  PreviewResponse,
  Role,
  SigningSecrets,
  Stats,
  TargetStatus,
} from "@duetime/sdk/contract";

export interface RequestContext {
  tenantId: string;
  roles: ReadonlySet<Role>;
  /** Who acts, for the audit log (an API key's id, or "anonymous"). */
  actor?: string;
  /** Aborted when the HTTP client goes away (ends a long poll early). */
  signal?: AbortSignal;
  /**
   * A bootstrap caller: a key given in the server's configuration
   * (--api-keys), or anyone when the server has no keys at all (development
   * mode). Only a bootstrap admin manages other tenants' API keys.
   */
  bootstrap?: boolean;
}

/** An active API key kept in the store, as authentication sees it. */
export interface StoredKey {
  keyId: string;
  tenantId: string;
  role: Role;
}

export const ALL_ROLES: ReadonlySet<Role> = new Set<Role>(["admin", "client", "worker"]);
export const DEFAULT_CONTEXT: RequestContext = { tenantId: "default", roles: ALL_ROLES };

export interface Service {
  createJob(ctx: RequestContext, spec: JobSpec, idempotencyKey?: string): Promise<CreatedJob>;
  createJobs(ctx: RequestContext, items: BatchCreateItem[]): Promise<BatchCreateResult[]>;
  getJob(ctx: RequestContext, jobId: string): Promise<Job>;
  listJobs(ctx: RequestContext, query: ListJobsQuery): Promise<Page<Job>>;
  cancelJob(ctx: RequestContext, jobId: string): Promise<void>;
  pauseJob(ctx: RequestContext, jobId: string): Promise<Job>;
  resumeJob(ctx: RequestContext, jobId: string): Promise<Job>;
  triggerJob(ctx: RequestContext, jobId: string): Promise<ExecutionItem>;
  /** Changes a job; with expectedVersion (If-Match or patch.version) a stale version is 409 VERSION_CONFLICT. A new schedule moves the next occurrence. */
  updateJob(ctx: RequestContext, jobId: string, patch: JobPatch, expectedVersion?: number): Promise<Job>;
  /** Creates the occurrences of a past window of a recurring job, spaced out; a repeated backfill adds nothing. */
  backfillJob(ctx: RequestContext, jobId: string, request: BackfillRequest): Promise<BackfillResponse>;
  /** The run ledger: every nominal fire time of the window and what became of it. */
  listOccurrences(ctx: RequestContext, jobId: string, query: OccurrencesQuery): Promise<{ items: OccurrenceItem[] }>;
  listExecutions(ctx: RequestContext, jobId: string, query: PageQuery): Promise<Page<ExecutionItem>>;
  listDeadLetters(ctx: RequestContext, query: PageQuery): Promise<Page<DeadLetter>>;
  replayDeadLetter(ctx: RequestContext, executionId: string): Promise<ExecutionItem>;
  lease(ctx: RequestContext, pool: string, request: LeaseRequest): Promise<LeaseResponse>;
  heartbeat(ctx: RequestContext, executionId: string, request: HeartbeatRequest): Promise<HeartbeatResponse>;
  complete(ctx: RequestContext, executionId: string, attempt: number, result?: unknown): Promise<CompleteResponse>;
  fail(ctx: RequestContext, executionId: string, attempt: number, error: ErrorRecord): Promise<FailResponse>;
  completeMany(ctx: RequestContext, items: CompleteItem[]): Promise<AckItem[]>;
  failMany(ctx: RequestContext, items: FailItem[]): Promise<AckItem[]>;
  poolStats(ctx: RequestContext, pool: string): Promise<PoolStats>;
  stats(ctx: RequestContext): Promise<Stats>;
  previewSchedule(query: PreviewQuery): Promise<PreviewResponse>;
  listAudit(ctx: RequestContext, query: PageQuery): Promise<Page<AuditItem>>;
  cluster(ctx: RequestContext): Promise<ClusterView>;
  /** The origins HTTP targets call on this node, with their breaker state. */
  listTargets(ctx: RequestContext): Promise<{ items: TargetStatus[] }>;
  /**
   * A new API key (role admin). The secret is in the answer only; the store
   * keeps its SHA-256 digest. Another tenant than the caller's needs a
   * bootstrap admin (PERMISSION_DENIED otherwise). Audited.
   */
  createKey(ctx: RequestContext, request: CreateKeyRequest): Promise<CreatedKey>;
  /** API keys, newest first, revoked ones included, never their secrets (role admin): the caller's tenant, or every tenant for a bootstrap admin. */
  listKeys(ctx: RequestContext, query: ListKeysQuery): Promise<Page<ApiKeyInfo>>;
  /** Revokes a key (role admin); repeating it is a no-op. Another tenant's key is NOT_FOUND unless the caller is a bootstrap admin. Audited. */
  revokeKey(ctx: RequestContext, keyId: string): Promise<void>;
  /**
   * The caller's tenant's callback signing secrets, newest first (role
   * admin): the configured ones (source "config"), else the one generated
   * and kept in the store (source "store"). NOT_FOUND when the tenant has
   * none (its calls go unsigned).
   */
  signingSecrets(ctx: RequestContext): Promise<SigningSecrets>;
  /** For authentication (no API route): the active stored key whose secret has this SHA-256 digest (hex), or null. */
  findKey(digest: string): Promise<StoredKey | null>;
  /** For authentication (no API route): whether the store has ever held a key (active or revoked); if so, authentication is on. */
  hasStoredKeys(): Promise<boolean>;
  /** True when the store answers and its writes are not failing (a full disk, a lock, an I/O error). */
  ready(): Promise<boolean>;
}
