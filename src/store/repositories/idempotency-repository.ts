import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { ClaimOptions, ClaimResult, IdempotencyScope, IdempotencyStore, StoredResponse } from '../store.ts'
import { type Database, type DialectParts, iso } from '../tables.ts'

const CLAIM_ATTEMPTS = 5

/**
 * The idempotency_keys table. A record is claimed (state `running`, held until `locked_until`) in
 * its own short transaction, then completed in the unit of work that makes the effect, so the
 * response and the effect commit together. A claim whose holder died is taken over as soon as its
 * owner's heartbeat lease (table `instances`) has lapsed, and in any case once its lock has passed;
 * the new token makes sure the old holder can no longer complete it.
 */
export class IdempotencyRepository implements IdempotencyStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  private row (scope: IdempotencyScope) {
    return this.db.selectFrom('idempotency_keys').selectAll()
      .where('principal', '=', scope.principal).where('method', '=', scope.method)
      .where('path', '=', scope.path).where('key', '=', scope.key)
  }

  async claim (scope: IdempotencyScope, fingerprint: string, now: Date, opts: ClaimOptions): Promise<ClaimResult> {
    const ts = this.dialect.timestamp(now)
    const lockedUntil = this.dialect.timestamp(new Date(now.getTime() + opts.lockMs))
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      // An expired record is as good as absent: the key may be used afresh.
      await this.db.deleteFrom('idempotency_keys')
        .where('principal', '=', scope.principal).where('method', '=', scope.method)
        .where('path', '=', scope.path).where('key', '=', scope.key)
        .where('expires_at', '<=', ts)
        .execute()
      const token = randomUUID()
      const inserted = await this.db.insertInto('idempotency_keys')
        .values({
          ...scope,
          fingerprint,
          token,
          owner: opts.owner,
          state: 'running',
          locked_until: lockedUntil,
          status: null,
          headers: null,
          body: null,
          created_at: ts,
          expires_at: this.dialect.timestamp(new Date(now.getTime() + opts.ttlMs)),
        })
        .onConflict(oc => oc.columns(['principal', 'method', 'path', 'key']).doNothing())
        .returning('token')
        .executeTakeFirst()
      if (inserted) return { outcome: 'claimed', token }
      const row = await this.row(scope).executeTakeFirst()
      if (!row) continue
      if (row.fingerprint !== fingerprint) return { outcome: 'reused' }
      if (row.state === 'done') {
        return { outcome: 'done', response: { status: Number(row.status), headers: JSON.parse(row.headers ?? '{}') as Record<string, string>, body: row.body ?? '' } }
      }
      const until = new Date(iso(row.locked_until))
      if (until > now && await this.ownerAlive(row.owner, now)) return { outcome: 'running', lockedUntil: until }
      // Its holder is gone (crashed, or gave up without releasing): take the claim over.
      const taken = await this.db.updateTable('idempotency_keys')
        .set({ token, owner: opts.owner, locked_until: lockedUntil })
        .where('principal', '=', scope.principal).where('method', '=', scope.method)
        .where('path', '=', scope.path).where('key', '=', scope.key)
        .where('token', '=', row.token).where('state', '=', 'running')
        .executeTakeFirst()
      if (Number(taken.numUpdatedRows) === 1) return { outcome: 'claimed', token }
    }
    // Lost every race for the record: someone else holds it now.
    return { outcome: 'running', lockedUntil: new Date(now.getTime() + 1000) }
  }

  async complete (scope: IdempotencyScope, token: string, response: StoredResponse): Promise<boolean> {
    const r = await this.db.updateTable('idempotency_keys')
      .set({ state: 'done', status: response.status, headers: JSON.stringify(response.headers), body: response.body })
      .where('principal', '=', scope.principal).where('method', '=', scope.method)
      .where('path', '=', scope.path).where('key', '=', scope.key)
      .where('token', '=', token).where('state', '=', 'running')
      .executeTakeFirst()
    return Number(r.numUpdatedRows) === 1
  }

  async release (scope: IdempotencyScope, token: string): Promise<void> {
    await this.db.deleteFrom('idempotency_keys')
      .where('principal', '=', scope.principal).where('method', '=', scope.method)
      .where('path', '=', scope.path).where('key', '=', scope.key)
      .where('token', '=', token).where('state', '=', 'running')
      .execute()
  }

  /** Whether the owner of a running claim still holds its lease (a record without an owner is judged by its lock alone). */
  private async ownerAlive (owner: string | null, now: Date): Promise<boolean> {
    if (owner === null) return true
    const lease = await this.db.selectFrom('instances').select('lease_until').where('id', '=', owner).executeTakeFirst()
    return lease !== undefined && new Date(iso(lease.lease_until)) > now
  }

  async heartbeat (owner: string, until: Date): Promise<void> {
    const leaseUntil = this.dialect.timestamp(until)
    await this.db.insertInto('instances').values({ id: owner, lease_until: leaseUntil })
      .onConflict(oc => oc.column('id').doUpdateSet({ lease_until: leaseUntil }))
      .execute()
  }

  async releaseOwner (owner: string): Promise<number> {
    const r = await this.db.deleteFrom('idempotency_keys').where('owner', '=', owner).where('state', '=', 'running').executeTakeFirst()
    await this.db.deleteFrom('instances').where('id', '=', owner).execute()
    return Number(r.numDeletedRows)
  }

  async sweep (now: Date): Promise<number> {
    await this.db.deleteFrom('instances').where('lease_until', '<=', this.dialect.timestamp(now)).execute()
    const r = await this.db.deleteFrom('idempotency_keys').where('expires_at', '<=', this.dialect.timestamp(now)).executeTakeFirst()
    return Number(r.numDeletedRows)
  }
}
