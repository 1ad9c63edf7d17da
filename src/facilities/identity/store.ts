import { type Kysely, sql } from 'kysely'
import type { Role } from '../../domain/roles.ts'
import type { StoreModule } from '../../store/module.ts'
import { readPage } from '../../store/read-page.ts'
import type { ListPage, ListQuery } from '../../store/store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../../store/tables.ts'
import * as m0001 from './0001-people.ts'

export type UserStatus = 'active' | 'suspended' | 'inactive'

interface UsersTable {
  id: string
  email: string | null
  name: string
  slug: string
  bio: string
  website: string | null
  avatar: string | null
  role: Role
  status: UserStatus
  password_hash: string | null
  totp_secret: string | null
  totp_pending: string | null
  totp_last_step: number | string
  generation: number
  created_at: Timestamp
  updated_at: Timestamp
  last_seen_at: Timestamp | null
  revision: number
}

declare module '../../store/tables.ts' {
  interface Database {
    users: UsersTable
    user_slug_aliases: { slug: string, user_id: string }
    recovery_codes: { user_id: string, hash: string, used_at: Timestamp | null }
    sessions: { id: string, user_id: string, method: string, user_agent: string, created_at: Timestamp, last_used_at: Timestamp, expires_at: Timestamp, ended_at: Timestamp | null }
    refresh_tokens: { hash: string, session_id: string, created_at: Timestamp, spent_at: Timestamp | null }
    signing_keys: { kid: string, private_jwk: string, public_jwk: string, created_at: Timestamp, retired_at: Timestamp | null }
    identity_revocations: { id: import('kysely').Generated<number>, kind: 'session' | 'user', subject: string, generation: number, expires_at: Timestamp }
    sign_in_failures: { key: string, failures: number, window_start: Timestamp, blocked_until: Timestamp | null }
    webauthn_challenges: { challenge: string, user_id: string | null, purpose: string, expires_at: Timestamp, used_at: Timestamp | null }
    passkeys: { id: string, user_id: string, name: string, public_key: string, counter: number | string, transports: string, created_at: Timestamp, last_used_at: Timestamp | null }
    invitations: { id: string, token_hash: string, email: string, role: Role, name: string | null, invited_by: string, created_at: Timestamp, expires_at: Timestamp, accepted_at: Timestamp | null, revoked_at: Timestamp | null }
    password_resets: { token_hash: string, user_id: string, created_at: Timestamp, expires_at: Timestamp, used_at: Timestamp | null }
  }
}
declare module '../../store/store.ts' { interface Repositories { readonly identity: IdentityRepository } }

/** A user as the store keeps it (secrets included: only the identity facility reads those). */
export interface UserRecord {
  readonly id: string
  readonly email: string | null
  readonly name: string
  readonly slug: string
  readonly bio: string
  readonly website: string | null
  readonly avatar: string | null
  readonly role: Role
  readonly status: UserStatus
  readonly passwordHash: string | null
  readonly totpSecret: string | null
  readonly totpPending: string | null
  readonly totpLastStep: number
  readonly generation: number
  readonly createdAt: string
  readonly updatedAt: string
  readonly lastSeenAt: string | null
  readonly revision: number
}

function toUser (r: UsersTable): UserRecord {
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    slug: r.slug,
    bio: r.bio,
    website: r.website,
    avatar: r.avatar,
    role: r.role,
    status: r.status,
    passwordHash: r.password_hash,
    totpSecret: r.totp_secret,
    totpPending: r.totp_pending,
    totpLastStep: Number(r.totp_last_step),
    generation: Number(r.generation),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
    lastSeenAt: r.last_seen_at === null ? null : iso(r.last_seen_at),
    revision: Number(r.revision),
  }
}

export interface SessionRecord {
  readonly id: string
  readonly userId: string
  readonly method: string
  readonly userAgent: string
  readonly createdAt: string
  readonly lastUsedAt: string
  readonly expiresAt: string
  readonly endedAt: string | null
}

function toSession (r: Database['sessions']): SessionRecord {
  return { id: r.id, userId: r.user_id, method: r.method, userAgent: r.user_agent, createdAt: iso(r.created_at), lastUsedAt: iso(r.last_used_at), expiresAt: iso(r.expires_at), endedAt: r.ended_at === null ? null : iso(r.ended_at) }
}

export interface PasskeyRecord {
  readonly id: string
  readonly userId: string
  readonly name: string
  readonly publicKey: string
  readonly counter: number
  readonly transports: readonly string[]
  readonly createdAt: string
  readonly lastUsedAt: string | null
}

function toPasskey (r: Database['passkeys']): PasskeyRecord {
  return { id: r.id, userId: r.user_id, name: r.name, publicKey: r.public_key, counter: Number(r.counter), transports: r.transports.split(' ').filter(Boolean), createdAt: iso(r.created_at), lastUsedAt: r.last_used_at === null ? null : iso(r.last_used_at) }
}

export interface InvitationRecord {
  readonly id: string
  readonly email: string
  readonly role: Role
  readonly name: string | null
  readonly invitedBy: string
  readonly createdAt: string
  readonly expiresAt: string
}

function toInvitation (r: Database['invitations']): InvitationRecord {
  return { id: r.id, email: r.email, role: r.role, name: r.name, invitedBy: r.invited_by, createdAt: iso(r.created_at), expiresAt: iso(r.expires_at) }
}

export interface UserFilter {
  readonly role?: Role
  readonly status?: UserStatus
  readonly q?: string
  /** Only these users. */
  readonly ids?: readonly string[]
}

export interface NewUser {
  readonly id: string
  readonly email: string | null
  readonly name: string
  readonly slug: string
  readonly role: Role
  readonly status: UserStatus
  readonly passwordHash: string | null
}

export type UserChanges = Partial<Pick<UserRecord, 'email' | 'name' | 'slug' | 'bio' | 'website' | 'avatar' | 'role' | 'status' | 'passwordHash' | 'totpSecret' | 'totpPending'>>

/**
 * The identity facility's tables: users, their sessions and refresh tokens, passkeys, codes,
 * invitations, resets, the signing keys, the throttle's counts and the revocations every instance
 * follows. It stores what it is given; the rules are the facility's (identity-service.ts).
 */
export class IdentityRepository {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  private ts (d: Date): Timestamp { return this.dialect.timestamp(d) }

  // Users

  async insertUser (u: NewUser, now: Date): Promise<UserRecord> {
    const row = await this.db.insertInto('users').values({
      id: u.id,
      email: u.email,
      name: u.name,
      slug: u.slug,
      bio: '',
      website: null,
      avatar: null,
      role: u.role,
      status: u.status,
      password_hash: u.passwordHash,
      totp_secret: null,
      totp_pending: null,
      totp_last_step: 0,
      generation: 1,
      created_at: this.ts(now),
      updated_at: this.ts(now),
      last_seen_at: null,
      revision: 1,
    }).returningAll().executeTakeFirstOrThrow()
    return toUser(row)
  }

  async userById (id: string): Promise<UserRecord | null> {
    const row = await this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? null : toUser(row)
  }

  async userByEmail (email: string): Promise<UserRecord | null> {
    const row = await this.db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst()
    return row === undefined ? null : toUser(row)
  }

  async userBySlug (slug: string): Promise<UserRecord | null> {
    const row = await this.db.selectFrom('users').selectAll().where('slug', '=', slug).executeTakeFirst()
    return row === undefined ? null : toUser(row)
  }

  async usersBySlugs (slugs: readonly string[]): Promise<UserRecord[]> {
    if (slugs.length === 0) return []
    const rows = await this.db.selectFrom('users').selectAll().where('slug', 'in', [...slugs]).execute()
    return rows.map(toUser)
  }

  async usersByIds (ids: readonly string[]): Promise<UserRecord[]> {
    if (ids.length === 0) return []
    const rows = await this.db.selectFrom('users').selectAll().where('id', 'in', [...ids]).execute()
    return rows.map(toUser)
  }

  /** The user a former slug of theirs names. */
  async userByAlias (slug: string): Promise<UserRecord | null> {
    const row = await this.db.selectFrom('user_slug_aliases').innerJoin('users', 'users.id', 'user_slug_aliases.user_id')
      .selectAll('users').where('user_slug_aliases.slug', '=', slug).executeTakeFirst()
    return row === undefined ? null : toUser(row)
  }

  async slugTaken (slug: string): Promise<boolean> {
    const row = await this.db.selectFrom('users').select('id').where('slug', '=', slug)
      .union(this.db.selectFrom('user_slug_aliases').select('user_id as id').where('slug', '=', slug)).executeTakeFirst()
    return row !== undefined
  }

  async slugsStartingWith (base: string): Promise<Set<string>> {
    const rows = await this.db.selectFrom('users').select('slug').where('slug', 'like', `${base.replaceAll('_', '')}%`).execute()
    return new Set(rows.map(r => r.slug))
  }

  async ownerExists (): Promise<boolean> {
    return (await this.db.selectFrom('users').select('id').where('role', '=', 'owner').executeTakeFirst()) !== undefined
  }

  async listUsers (query: ListQuery<'name', UserFilter>): Promise<ListPage<UserRecord>> {
    const base = () => {
      let q = this.db.selectFrom('users')
      const f = query.filter
      if (f.role !== undefined) q = q.where('role', '=', f.role)
      if (f.status !== undefined) q = q.where('status', '=', f.status)
      if (f.ids !== undefined) q = f.ids.length === 0 ? q.where(sql<boolean>`1 = 0`) : q.where('id', 'in', [...f.ids])
      if (f.q !== undefined) {
        const like = `%${f.q.toLowerCase().replace(/[\\%_]/g, m => `\\${m}`)}%`
        q = q.where(sql<boolean>`(lower(name) LIKE ${like} ESCAPE '\\' OR email LIKE ${like} ESCAPE '\\')`)
      }
      return q
    }
    const count = async () => Number((await base().select(eb => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n)
    const page = await readPage(base().selectAll(), query, key => `users.${key}`, count)
    return { ...page, items: page.items.map(toUser) }
  }

  /**
   * Writes `changes` if the user is still at `revision` (compare and set): the user after, or null
   * when another write came first. A change of slug keeps the old one as an alias; a change of
   * role, status or slug moves the user's generation on, which ends the access tokens made before.
   */
  async updateUser (before: UserRecord, changes: UserChanges, now: Date): Promise<UserRecord | null> {
    const set: Record<string, unknown> = { updated_at: this.ts(now), revision: before.revision + 1 }
    if (changes.email !== undefined) set.email = changes.email === null ? null : changes.email.toLowerCase()
    if (changes.name !== undefined) set.name = changes.name
    if (changes.slug !== undefined) set.slug = changes.slug
    if (changes.bio !== undefined) set.bio = changes.bio
    if (changes.website !== undefined) set.website = changes.website
    if (changes.avatar !== undefined) set.avatar = changes.avatar
    if (changes.role !== undefined) set.role = changes.role
    if (changes.status !== undefined) set.status = changes.status
    if (changes.passwordHash !== undefined) set.password_hash = changes.passwordHash
    if (changes.totpSecret !== undefined) set.totp_secret = changes.totpSecret
    if (changes.totpPending !== undefined) set.totp_pending = changes.totpPending
    if (tokensChange(before, changes)) set.generation = before.generation + 1
    const row = await this.db.updateTable('users').set(set).where('id', '=', before.id).where('revision', '=', before.revision).returningAll().executeTakeFirst()
    if (row === undefined) return null
    if (changes.slug !== undefined && changes.slug !== before.slug) {
      await this.db.deleteFrom('user_slug_aliases').where('slug', '=', changes.slug).execute()
      await this.db.insertInto('user_slug_aliases').values({ slug: before.slug, user_id: before.id }).onConflict(oc => oc.column('slug').doUpdateSet({ user_id: before.id })).execute()
    }
    return toUser(row)
  }

  /** Takes a TOTP time step as used: false when it (or a later one) was used already. */
  async useTotpStep (userId: string, step: number): Promise<boolean> {
    const r = await this.db.updateTable('users').set({ totp_last_step: step }).where('id', '=', userId).where('totp_last_step', '<', step).executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async touchUser (userId: string, now: Date): Promise<void> {
    await this.db.updateTable('users').set({ last_seen_at: this.ts(now) }).where('id', '=', userId).execute()
  }

  async deleteUser (id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('users').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  // Recovery codes

  async replaceRecoveryCodes (userId: string, hashes: readonly string[]): Promise<void> {
    await this.db.deleteFrom('recovery_codes').where('user_id', '=', userId).execute()
    if (hashes.length > 0) await this.db.insertInto('recovery_codes').values(hashes.map(hash => ({ user_id: userId, hash, used_at: null }))).execute()
  }

  async useRecoveryCode (userId: string, hash: string, now: Date): Promise<boolean> {
    const r = await this.db.updateTable('recovery_codes').set({ used_at: this.ts(now) }).where('user_id', '=', userId).where('hash', '=', hash).where('used_at', 'is', null).executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  // Sessions and refresh tokens

  async insertSession (s: { id: string, userId: string, method: string, userAgent: string, expiresAt: Date }, refreshHash: string, now: Date): Promise<SessionRecord> {
    const row = await this.db.insertInto('sessions').values({ id: s.id, user_id: s.userId, method: s.method, user_agent: s.userAgent, created_at: this.ts(now), last_used_at: this.ts(now), expires_at: this.ts(s.expiresAt), ended_at: null }).returningAll().executeTakeFirstOrThrow()
    await this.db.insertInto('refresh_tokens').values({ hash: refreshHash, session_id: s.id, created_at: this.ts(now), spent_at: null }).execute()
    return toSession(row)
  }

  async session (id: string): Promise<SessionRecord | null> {
    const row = await this.db.selectFrom('sessions').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? null : toSession(row)
  }

  async refreshToken (hash: string): Promise<{ sessionId: string, spent: boolean } | null> {
    const row = await this.db.selectFrom('refresh_tokens').select(['session_id', 'spent_at']).where('hash', '=', hash).executeTakeFirst()
    return row === undefined ? null : { sessionId: row.session_id, spent: row.spent_at !== null }
  }

  /** Spends a refresh token: false when it was spent already (then it is being reused). */
  async spendRefreshToken (hash: string, next: string, sessionId: string, expiresAt: Date, now: Date): Promise<boolean> {
    const r = await this.db.updateTable('refresh_tokens').set({ spent_at: this.ts(now) }).where('hash', '=', hash).where('spent_at', 'is', null).executeTakeFirst()
    if (Number(r.numUpdatedRows) === 0) return false
    await this.db.insertInto('refresh_tokens').values({ hash: next, session_id: sessionId, created_at: this.ts(now), spent_at: null }).execute()
    await this.db.updateTable('sessions').set({ last_used_at: this.ts(now), expires_at: this.ts(expiresAt) }).where('id', '=', sessionId).execute()
    return true
  }

  async liveSessions (userId: string, now: Date): Promise<SessionRecord[]> {
    const rows = await this.db.selectFrom('sessions').selectAll().where('user_id', '=', userId).where('ended_at', 'is', null)
      .where('expires_at', '>', this.ts(now)).orderBy('created_at', 'desc').orderBy('id').execute()
    return rows.map(toSession)
  }

  /** Ends sessions (those of `userId` but `except`, or the one `sessionId`): the ids it ended. */
  async endSessions (where: { userId: string, except?: string } | { sessionId: string }, now: Date): Promise<string[]> {
    let q = this.db.updateTable('sessions').set({ ended_at: this.ts(now) }).where('ended_at', 'is', null)
    if ('sessionId' in where) q = q.where('id', '=', where.sessionId)
    else {
      q = q.where('user_id', '=', where.userId)
      if (where.except !== undefined) q = q.where('id', '<>', where.except)
    }
    const rows = await q.returning('id').execute()
    return rows.map(r => r.id)
  }

  // Revocations every instance follows

  async revoke (kind: 'session' | 'user', subject: string, generation: number, expiresAt: Date): Promise<void> {
    await this.db.insertInto('identity_revocations').values({ kind, subject, generation, expires_at: this.ts(expiresAt) }).execute()
  }

  async revocations (after: number, now: Date, limit: number): Promise<Array<{ id: number, kind: 'session' | 'user', subject: string, generation: number }>> {
    const rows = await this.db.selectFrom('identity_revocations').select(['id', 'kind', 'subject', 'generation'])
      .where('id', '>', after).where('expires_at', '>', this.ts(now)).orderBy('id').limit(limit).execute()
    return rows.map(r => ({ id: Number(r.id), kind: r.kind, subject: r.subject, generation: Number(r.generation) }))
  }

  async lastRevocation (): Promise<number> {
    const row = await this.db.selectFrom('identity_revocations').select(eb => eb.fn.max('id').as('id')).executeTakeFirst()
    return Number(row?.id ?? 0)
  }

  async pruneRevocations (now: Date): Promise<void> {
    await this.db.deleteFrom('identity_revocations').where('expires_at', '<=', this.ts(now)).execute()
  }

  // Signing keys

  async signingKeys (): Promise<Array<{ kid: string, privateJwk: string, publicJwk: string, createdAt: string, retiredAt: string | null }>> {
    const rows = await this.db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('kid', 'desc').execute()
    return rows.map(r => ({ kid: r.kid, privateJwk: r.private_jwk, publicJwk: r.public_jwk, createdAt: iso(r.created_at), retiredAt: r.retired_at === null ? null : iso(r.retired_at) }))
  }

  /** Adds a key unless one that is not retired exists (two instances starting at once make one). */
  async addSigningKey (k: { kid: string, privateJwk: string, publicJwk: string }, now: Date, retireOthers: boolean): Promise<void> {
    if (retireOthers) await this.db.updateTable('signing_keys').set({ retired_at: this.ts(now) }).where('retired_at', 'is', null).execute()
    await this.db.insertInto('signing_keys').values({ kid: k.kid, private_jwk: k.privateJwk, public_jwk: k.publicJwk, created_at: this.ts(now), retired_at: null }).execute()
  }

  async pruneSigningKeys (retiredBefore: Date): Promise<void> {
    await this.db.deleteFrom('signing_keys').where('retired_at', '<', this.ts(retiredBefore)).execute()
  }

  // The sign-in throttle

  /** Until when each of `keys` is refused (null: not now, or never was). */
  async blockedUntil (keys: readonly string[]): Promise<Array<string | null>> {
    const rows = await this.db.selectFrom('sign_in_failures').select('blocked_until').where('key', 'in', [...keys]).execute()
    return rows.map(r => r.blocked_until === null ? null : iso(r.blocked_until))
  }

  /**
   * Counts one failure for `key`: a new count when its window began before `windowStart` and it is
   * not blocked, nor was in that time; the count after it.
   */
  async countFailure (key: string, now: Date, windowStart: Date): Promise<number> {
    const row = await this.db.insertInto('sign_in_failures').values({ key, failures: 1, window_start: this.ts(now), blocked_until: null })
      .onConflict(oc => oc.column('key').doUpdateSet(eb => ({
        failures: sql<number>`CASE WHEN ${eb.ref('sign_in_failures.window_start')} < ${this.ts(windowStart)} AND (${eb.ref('sign_in_failures.blocked_until')} IS NULL OR ${eb.ref('sign_in_failures.blocked_until')} < ${this.ts(windowStart)}) THEN 1 ELSE ${eb.ref('sign_in_failures.failures')} + 1 END`,
        window_start: sql<Timestamp>`CASE WHEN ${eb.ref('sign_in_failures.window_start')} < ${this.ts(windowStart)} AND (${eb.ref('sign_in_failures.blocked_until')} IS NULL OR ${eb.ref('sign_in_failures.blocked_until')} < ${this.ts(windowStart)}) THEN ${this.ts(now)} ELSE ${eb.ref('sign_in_failures.window_start')} END`,
      })))
      .returning('failures').executeTakeFirstOrThrow()
    return Number(row.failures)
  }

  async block (key: string, until: Date): Promise<void> {
    await this.db.updateTable('sign_in_failures').set({ blocked_until: this.ts(until) }).where('key', '=', key).execute()
  }

  async clearFailures (keys: readonly string[]): Promise<void> {
    await this.db.deleteFrom('sign_in_failures').where('key', 'in', [...keys]).execute()
  }

  // WebAuthn challenges and passkeys

  async addChallenge (challenge: string, userId: string | null, purpose: string, expiresAt: Date): Promise<void> {
    await this.db.insertInto('webauthn_challenges').values({ challenge, user_id: userId, purpose, expires_at: this.ts(expiresAt), used_at: null }).execute()
  }

  /** Takes a challenge for its one use: its user (or null for a sign-in's), or undefined when unknown, used or late. */
  async useChallenge (challenge: string, purpose: string, now: Date): Promise<{ userId: string | null } | undefined> {
    const row = await this.db.updateTable('webauthn_challenges').set({ used_at: this.ts(now) })
      .where('challenge', '=', challenge).where('purpose', '=', purpose).where('used_at', 'is', null).where('expires_at', '>', this.ts(now))
      .returning('user_id').executeTakeFirst()
    return row === undefined ? undefined : { userId: row.user_id }
  }

  async pruneChallenges (now: Date): Promise<void> {
    await this.db.deleteFrom('webauthn_challenges').where('expires_at', '<', this.ts(now)).execute()
  }

  async insertPasskey (p: { id: string, userId: string, name: string, publicKey: string, counter: number, transports: readonly string[] }, now: Date): Promise<PasskeyRecord> {
    const row = await this.db.insertInto('passkeys').values({ id: p.id, user_id: p.userId, name: p.name, public_key: p.publicKey, counter: p.counter, transports: p.transports.join(' '), created_at: this.ts(now), last_used_at: null }).returningAll().executeTakeFirstOrThrow()
    return toPasskey(row)
  }

  async passkey (id: string): Promise<PasskeyRecord | null> {
    const row = await this.db.selectFrom('passkeys').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? null : toPasskey(row)
  }

  async passkeysOf (userId: string): Promise<PasskeyRecord[]> {
    const rows = await this.db.selectFrom('passkeys').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute()
    return rows.map(toPasskey)
  }

  /** Moves a passkey's counter on: false when it did not move forward (a cloned authenticator). */
  async usePasskey (id: string, from: number, to: number, now: Date): Promise<boolean> {
    const r = await this.db.updateTable('passkeys').set({ counter: to, last_used_at: this.ts(now) }).where('id', '=', id).where('counter', '=', from).executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  async deletePasskey (userId: string, id: string): Promise<boolean> {
    const r = await this.db.deleteFrom('passkeys').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  // Invitations and resets

  async insertInvitation (i: { id: string, tokenHash: string, email: string, role: Role, name: string | null, invitedBy: string, expiresAt: Date }, now: Date): Promise<InvitationRecord> {
    const row = await this.db.insertInto('invitations').values({ id: i.id, token_hash: i.tokenHash, email: i.email.toLowerCase(), role: i.role, name: i.name, invited_by: i.invitedBy, created_at: this.ts(now), expires_at: this.ts(i.expiresAt), accepted_at: null, revoked_at: null }).returningAll().executeTakeFirstOrThrow()
    return toInvitation(row)
  }

  async openInvitations (now: Date): Promise<InvitationRecord[]> {
    const rows = await this.db.selectFrom('invitations').selectAll().where('accepted_at', 'is', null).where('revoked_at', 'is', null)
      .where('expires_at', '>', this.ts(now)).orderBy('created_at', 'desc').orderBy('id').execute()
    return rows.map(toInvitation)
  }

  async revokeInvitation (id: string, now: Date): Promise<boolean> {
    const r = await this.db.updateTable('invitations').set({ revoked_at: this.ts(now) }).where('id', '=', id).where('accepted_at', 'is', null).where('revoked_at', 'is', null).executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }

  /** The invitation a token is for while it can be accepted, or null. */
  async openInvitation (tokenHash: string, now: Date): Promise<InvitationRecord | null> {
    const row = await this.db.selectFrom('invitations').selectAll().where('token_hash', '=', tokenHash).where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null).where('expires_at', '>', this.ts(now)).executeTakeFirst()
    return row === undefined ? null : toInvitation(row)
  }

  /** Takes an invitation for its one use: it, or null when unknown, used, revoked or expired. */
  async acceptInvitation (tokenHash: string, now: Date): Promise<InvitationRecord | null> {
    const row = await this.db.updateTable('invitations').set({ accepted_at: this.ts(now) })
      .where('token_hash', '=', tokenHash).where('accepted_at', 'is', null).where('revoked_at', 'is', null).where('expires_at', '>', this.ts(now))
      .returningAll().executeTakeFirst()
    return row === undefined ? null : toInvitation(row)
  }

  async insertReset (tokenHash: string, userId: string, expiresAt: Date, now: Date): Promise<void> {
    await this.db.insertInto('password_resets').values({ token_hash: tokenHash, user_id: userId, created_at: this.ts(now), expires_at: this.ts(expiresAt), used_at: null }).execute()
  }

  async useReset (tokenHash: string, now: Date): Promise<string | null> {
    const row = await this.db.updateTable('password_resets').set({ used_at: this.ts(now) })
      .where('token_hash', '=', tokenHash).where('used_at', 'is', null).where('expires_at', '>', this.ts(now))
      .returning('user_id').executeTakeFirst()
    return row?.user_id ?? null
  }

  // People's API keys (the core's api_keys table, with the user who made them)

  async setKeyOwner (keyId: string, userId: string): Promise<void> {
    await this.db.updateTable('api_keys').set({ user_id: userId } as never).where('id', '=', keyId).execute()
  }

  async keysOf (userId: string): Promise<Array<{ id: string, name: string, scopes: string[], createdAt: string }>> {
    const rows = await sql<{ id: string, name: string, scopes: string, created_at: Timestamp }>`SELECT id, name, scopes, created_at FROM api_keys WHERE user_id = ${userId} AND revoked_at IS NULL ORDER BY created_at, id`.execute(this.db)
    return rows.rows.map(r => ({ id: r.id, name: r.name, scopes: r.scopes.split(' ').filter(Boolean), createdAt: iso(r.created_at) }))
  }

  async keyOwner (keyId: string): Promise<string | null> {
    const rows = await sql<{ user_id: string | null }>`SELECT user_id FROM api_keys WHERE id = ${keyId}`.execute(this.db)
    return rows.rows[0]?.user_id ?? null
  }

  async revokeKeysOf (userId: string, name: string | null, now: Date): Promise<number> {
    const r = name === null
      ? await sql`UPDATE api_keys SET revoked_at = ${this.ts(now)} WHERE user_id = ${userId} AND revoked_at IS NULL`.execute(this.db)
      : await sql`UPDATE api_keys SET revoked_at = ${this.ts(now)} WHERE user_id = ${userId} AND name = ${name} AND revoked_at IS NULL`.execute(this.db)
    return Number(r.numAffectedRows ?? 0)
  }
}

/** Whether a change ends the access tokens made before it (they say who the user is and may do). */
function tokensChange (before: UserRecord, changes: UserChanges): boolean {
  return (changes.role !== undefined && changes.role !== before.role) ||
    (changes.status !== undefined && changes.status !== before.status) ||
    (changes.slug !== undefined && changes.slug !== before.slug) ||
    (changes.name !== undefined && changes.name !== before.name)
}

export const identityStore: StoreModule = {
  name: 'identity',
  migrations: { 'identity/0001-people': m0001.migration },
  repository: (db, dialect): IdentityRepository => new IdentityRepository(db, dialect),
}
