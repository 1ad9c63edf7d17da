import type { Clock } from '../../clock.ts'
import type { PolledJob } from '../../jobs/job.ts'
import type { Store } from '../../store/store.ts'
import { ACCESS_TOKEN_S } from './tokens.ts'

/** How often each instance reads the revocations others wrote: well inside the contract's second. */
export const REVOCATIONS_POLL_MS = 200
/** A revocation outlives every access token it refuses (with room for clocks a little apart). */
const KEPT_MS = (ACCESS_TOKEN_S + 60) * 1000

/**
 * What every instance must refuse although the token verifies: sessions ended, and users whose
 * role, status or slug changed (each such change moves the user's generation on; a token made at
 * an older one is refused). Kept in memory, so that checking a token needs no store round trip;
 * filled from the store's revocations table, which every instance reads every 200 ms.
 */
export class Revocations {
  /** Ended sessions, each until when it matters (its last access token has expired). */
  private readonly sessions = new Map<string, number>()
  private readonly generations = new Map<string, { generation: number, until: number }>()
  private cursor = 0
  private idle = 0

  constructor (private readonly store: Store, private readonly clock: Clock) {}

  refuses (sessionId: string | null, userId: string, generation: number): boolean {
    if (sessionId !== null && this.sessions.has(sessionId)) return true
    const current = this.generations.get(userId)
    return current !== undefined && generation < current.generation
  }

  /** Written in the unit of work that ends the session (or changes the user); seen here at once. */
  async endSession (uow: Pick<Store, 'identity'>, sessionId: string): Promise<void> {
    await uow.identity.revoke('session', sessionId, 0, new Date(this.clock.now().getTime() + KEPT_MS))
    this.note('session', sessionId, 0)
  }

  async userChanged (uow: Pick<Store, 'identity'>, userId: string, generation: number): Promise<void> {
    await uow.identity.revoke('user', userId, generation, new Date(this.clock.now().getTime() + KEPT_MS))
    this.note('user', userId, generation)
  }

  private note (kind: 'session' | 'user', subject: string, generation: number): void {
    const until = this.clock.now().getTime() + KEPT_MS
    if (kind === 'session') this.sessions.set(subject, until)
    else this.generations.set(subject, { generation: Math.max(generation, this.generations.get(subject)?.generation ?? 0), until })
  }

  /** Forgets what refuses nothing any more: memory stays bounded by what the last 16 minutes revoked. */
  private forget (): void {
    const now = this.clock.now().getTime()
    for (const [id, until] of this.sessions) if (until <= now) this.sessions.delete(id)
    for (const [id, g] of this.generations) if (g.until <= now) this.generations.delete(id)
  }

  /** Reads what is new; true when a full page came (more may wait). */
  async catchUp (): Promise<boolean> {
    const rows = await this.store.identity.revocations(this.cursor, this.clock.now(), 1000)
    for (const r of rows) {
      this.note(r.kind, r.subject, r.generation)
      this.cursor = r.id
    }
    if (rows.length === 0 && ++this.idle % 300 === 0) this.forget()
    return rows.length === 1000
  }

  /** This instance's poll of the revocations (every instance runs it: each keeps its own). */
  job (): PolledJob {
    return {
      name: 'identity-revocations',
      runsOn: 'instance',
      pollMs: REVOCATIONS_POLL_MS,
      tick: async () => await this.catchUp(),
    }
  }

  /** The deployment's sweep of what no longer refuses anything (revocations, challenges). */
  sweep (): PolledJob {
    return {
      name: 'identity-sweep',
      pollMs: 60_000,
      tick: async () => {
        const now = this.clock.now()
        await this.store.identity.pruneRevocations(now)
        await this.store.identity.pruneChallenges(now)
        return false
      },
    }
  }
}
