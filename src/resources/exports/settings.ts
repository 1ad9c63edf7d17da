import type { SettingsSection } from '../../config.ts'

/** The exports' settings: `config.exports`. */
export interface ExportSettings {
  /** Finished exports and their files are deleted this many days after they finished. */
  readonly retentionDays: number
  /** How long a worker's claim on a job lasts without being renewed. */
  readonly leaseMs: number
  /** Runs a job may start (a restart or a failure ends one) before it is failed. */
  readonly maxAttempts: number
  /** How often an idle worker looks for jobs and due webhooks. */
  readonly pollMs: number
}

declare module '../../config.ts' { interface ResourceSettings { readonly exports: ExportSettings } }

export const exportSettings: SettingsSection<'exports'> = {
  name: 'exports',
  read: env => ({
    retentionDays: env.int('EXPORT_RETENTION_DAYS', 7, 1, 3650),
    leaseMs: env.int('EXPORT_LEASE_MS', 30_000, 100, 3_600_000),
    maxAttempts: env.int('EXPORT_MAX_ATTEMPTS', 3, 1, 100),
    pollMs: env.int('EXPORT_POLL_MS', 500, 10, 60_000),
  }),
  rows: [
    { name: 'EXPORT_RETENTION_DAYS', default: '7', description: 'Finished exports and their files are deleted this many days after they finished (swept hourly).' },
    { name: 'EXPORT_LEASE_MS', default: '30000', description: 'How long a worker\'s claim on an export lasts unless renewed (it is renewed with every page written); a job whose worker died is taken up again after it.' },
    { name: 'EXPORT_MAX_ATTEMPTS', default: '3', description: 'Runs an export may start (a crash or a failure ends one) before it is marked `failed` with a reason.' },
    { name: 'EXPORT_POLL_MS', default: '500', description: 'How often each instance\'s worker looks for queued exports (an export made on the instance wakes it at once).' },
  ],
}
