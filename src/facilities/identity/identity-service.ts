import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { actorOf, isAdmin, type Person, type Principal } from '../../domain/principal.ts'
import { type Role, ROLE_ACTIONS, roleMay, roleRank, scopesOfRole } from '../../domain/roles.ts'
import { deriveSlug, firstFreeSlug } from '../../domain/slug.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import { hashSecret } from '../../http/pipeline/auth.ts'
import type { Repositories, Store, UnitOfWork } from '../../store/store.ts'
import { checkPassword, hashPassword, passwordMatches } from './passwords.ts'
import { Passkeys, relyingParty } from './passkeys.ts'
import { Revocations } from './revocations.ts'
import type { InvitationRecord, PasskeyRecord, SessionRecord, UserChanges, UserRecord } from './store.ts'
import { SignInThrottle } from './throttle.ts'
import { isServiceToken, SigningKeys, TokenRefused } from './tokens.ts'
import { newRecoveryCodes, newTotpSecret, otpauthUrl, recoveryCodeHash, totpStep } from './two-factor.ts'

export type SessionMethod = 'password' | 'passkey' | 'invitation' | 'setup'
/** Where a sign-in comes from: the client's address (for the throttle) and its user agent (shown in the sessions). */
export interface Client { readonly address: string, readonly userAgent: string }

/** What a client may ask to change of a user. */
export interface UserEdit {
  readonly name?: string
  readonly slug?: string
  readonly bio?: string
  readonly website?: string | null
  readonly avatar?: string | null
  readonly email?: string
  readonly role?: Role
  readonly status?: 'active' | 'suspended'
}

/** What starting or refreshing a session answers (the route renders it). */
export interface SessionStart {
  readonly accessToken: string
  readonly expiresIn: number
  readonly refreshToken: string
  readonly session: SessionRecord
  readonly user: UserRecord
}

const INVITATION_MS = 7 * 24 * 3600_000
const RESET_MS = 3600_000
/** Verified access tokens kept per instance (each until it expires). */
const VERIFIED_MAX = 10_000

function token (bytes: number): string {
  return randomBytes(bytes).toString('base64url')
}

function invalidCredentials (): AppError {
  return new AppError('INVALID_CREDENTIALS', 'The email, password or code is not right, or this account cannot sign in.')
}
export function roleForbids (what: string): AppError {
  return new AppError('ROLE_FORBIDS', what)
}
function sessionRevoked (): AppError {
  return new AppError('SESSION_REVOKED', 'This session has ended: sign in again.')
}
export function userNotFound (id: string): AppError {
  return new AppError('USER_NOT_FOUND', `No user ${id} exists.`)
}

/** A user as a principal: their role's scopes; what they write is owned by their slug. */
export function personPrincipal (person: Person): Principal {
  return { subject: person.slug, scopes: new Set(scopesOfRole(person.role)), kind: 'user', person }
}

function personOf (user: UserRecord, sessionId: string | null): Person {
  return { id: user.id, slug: user.slug, name: user.name, role: user.role, sessionId }
}

/** The first free slug a name gives among users' slugs and former slugs. */
export async function freeUserSlug (repos: Repositories, name: string): Promise<string> {
  const base = deriveSlug(name)
  const taken = await repos.identity.slugsStartingWith(base)
  for (let n = 1; ; n++) {
    const { slug } = firstFreeSlug(base, taken, n)
    if (!await repos.identity.slugTaken(slug)) return slug
    taken.add(slug)
  }
}

/** A user's event: their representation (no email, which is the user's own), seen by admins. */
export function userEvent (type: 'user.created' | 'user.updated' | 'user.suspended' | 'user.deleted', user: UserRecord): { type: string, data: unknown, owner: string | null, public: boolean } {
  const data = type === 'user.deleted'
    ? { id: user.id }
    : { id: user.id, name: user.name, slug: user.slug, bio: user.bio, website: user.website, avatar: user.avatar, role: user.role, status: user.status, created_at: user.createdAt, updated_at: user.updatedAt }
  return { type, data, owner: user.slug, public: false }
}

/** A new user's id: 128 random bits. */
export function newUserId (): string {
  return token(16)
}

/**
 * People's identity: who a token is, sign-in by password, passkey, invitation or set-up, sessions
 * with refresh tokens that rotate and betray their reuse, two-factor codes, invitations, resets,
 * and the throttle. Every rule about people lives here; resources ask it who a request is.
 */
/** What anyone may see of a person: their public profile (`avatar` a media id). */
export interface PublicProfile {
  readonly id: string
  readonly slug: string
  readonly name: string
  readonly bio: string
  readonly website: string | null
  readonly avatar: string | null
}

export class IdentityService {
  readonly keys: SigningKeys
  readonly revocations: Revocations
  readonly throttle: SignInThrottle
  readonly passkeys: Passkeys
  private readonly verified = new Map<string, { principal: Principal, generation: number, until: number }>()
  private readonly setupSecret: string

  constructor (
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly config: Config,
    serverSecret: Buffer,
    /** Counts each password hash comparison (`password_verifications_total`). */
    private readonly verifications: { inc: () => void } = { inc: () => {} }
  ) {
    this.keys = new SigningKeys(store, clock, config.publicBaseUrl)
    this.revocations = new Revocations(store, clock)
    this.throttle = new SignInThrottle(store, clock, config.identity)
    this.passkeys = new Passkeys(store, clock, relyingParty(config.publicBaseUrl, config.port))
    this.setupSecret = setupTokenOf(serverSecret)
  }

  /** Before the first request: the signing keys (made at the first start), the revocations so far. */
  async start (): Promise<void> {
    await this.keys.load()
    while (await this.revocations.catchUp()) { /* read them all */ }
  }

  // Who a token is

  /**
   * The person an access token of this service is, checked without the store: the signature (by
   * a key loaded at start, or made since by another instance), its expiry, and the revocations
   * this instance follows (a session ended, a user changed since the token was made). A token
   * that verified is remembered until it expires; the revocations are asked at every use.
   */
  async authenticate (accessToken: string): Promise<Principal | null> {
    const now = this.clock.now().getTime()
    let hit = this.verified.get(accessToken)
    if (hit !== undefined && now >= hit.until) {
      this.verified.delete(accessToken)
      hit = undefined
    }
    if (hit === undefined) {
      if (!isServiceToken(accessToken)) return null
      const claims = await this.keys.verify(accessToken)
      hit = { principal: personPrincipal(claims.person), generation: claims.generation, until: claims.exp * 1000 }
      if (this.verified.size >= VERIFIED_MAX) this.verified.delete(this.verified.keys().next().value!)
      this.verified.set(accessToken, hit)
    }
    const person = hit.principal.person!
    if (this.revocations.refuses(person.sessionId, person.id, hit.generation)) throw new TokenRefused('The token\'s session has ended, or its user changed since: refresh it, or sign in again.')
    return hit.principal
  }

  /** A person's API key: them, with the key's scopes capped by their role; null when they may not sign in now. */
  async keyPrincipal (userId: string, scopes: readonly string[]): Promise<Principal | null> {
    const user = await this.store.identity.userById(userId)
    if (user === null || user.status !== 'active') return null
    const allowed = new Set(scopesOfRole(user.role))
    const capped = scopes.filter(s => allowed.has(s) || allowed.has('admin'))
    return { subject: user.slug, scopes: new Set(capped), kind: 'api-key', person: personOf(user, null) }
  }

  // Set-up

  /** The one-time set-up link's token: the same at every start until the owner exists. */
  get setupToken (): string {
    return this.setupSecret
  }

  async needsSetup (): Promise<boolean> {
    return !await this.store.identity.ownerExists()
  }

  async setup (body: { token: string, name: string, email: string, password: string }, client: Client): Promise<SessionStart> {
    if (!await this.needsSetup()) throw new AppError('ALREADY_SET_UP', 'The blog has an owner: set-up is done.')
    if (!safeEqual(body.token, this.setupSecret)) throw new AppError('SETUP_TOKEN_INVALID', 'This is not the set-up link the service printed at start.')
    await checkPassword(body.password, 'password', body)
    const hash = await hashPassword(body.password)
    return await this.store.transaction(async uow => {
      // Checked again inside the unit: two set-ups at once make one owner.
      if (await uow.identity.ownerExists()) throw new AppError('ALREADY_SET_UP', 'The blog has an owner: set-up is done.')
      const user = await this.createUser(uow, { email: body.email, name: body.name, role: 'owner', passwordHash: hash })
      return await this.startSession(uow, user, 'setup', client)
    }, { actor: { kind: 'system', id: null, name: 'system' } })
  }

  /**
   * Makes a user (`active` with a password or a sign-in to come; `inactive` without an email): an
   * email an inactive profile already has makes that profile active instead.
   */
  async createUser (uow: UnitOfWork, u: { email: string | null, name: string, role: Role, passwordHash: string | null, slug?: string, status?: 'active' | 'inactive' }): Promise<UserRecord> {
    const email = u.email?.trim().toLowerCase() ?? null
    if (email !== null) {
      const existing = await uow.identity.userByEmail(email)
      if (existing !== null && existing.status !== 'inactive') throw new AppError('EMAIL_TAKEN', 'An active user already has this email.')
      if (existing !== null) {
        const user = await uow.identity.updateUser(existing, { status: u.status ?? 'active', role: u.role, passwordHash: u.passwordHash, name: u.name }, this.clock.now())
        if (user === null) throw new AppError('CONFLICT', 'The user changed meanwhile: try again.')
        uow.events.record(userEvent('user.updated', user))
        return user
      }
    }
    const slug = u.slug ?? await freeUserSlug(uow, u.name)
    const user = await uow.identity.insertUser({ id: newUserId(), email, name: u.name, slug, role: u.role, status: u.status ?? (email === null ? 'inactive' : 'active'), passwordHash: u.passwordHash }, this.clock.now())
    uow.events.record(userEvent('user.created', user))
    return user
  }

  // Sessions

  private async startSession (uow: UnitOfWork, user: UserRecord, method: SessionMethod, client: Client): Promise<SessionStart> {
    const refreshToken = token(32)
    const now = this.clock.now()
    const session = await uow.identity.insertSession({ id: token(16), userId: user.id, method, userAgent: client.userAgent.slice(0, 300), expiresAt: this.sessionEnd(now) }, hashSecret(refreshToken), now)
    await uow.identity.touchUser(user.id, now)
    const access = await this.keys.sign(personOf(user, session.id), user.generation)
    return { accessToken: access.token, expiresIn: access.expiresIn, refreshToken, session, user }
  }

  private sessionEnd (now: Date): Date {
    return new Date(now.getTime() + this.config.identity.sessionDays * 86_400_000)
  }

  /**
   * A password sign-in. The throttle first (a throttled attempt compares no password); then one
   * hash comparison whatever the email (an unknown one against a decoy), so that the answer's
   * time does not tell which emails exist; then the code when the account has two-factor on.
   */
  async signIn (body: { email: string, password: string, code?: string }, client: Client): Promise<SessionStart> {
    await this.throttle.check(body.email, client.address)
    const user = await this.store.identity.userByEmail(body.email.trim())
    const matches = await this.passwordMatches(user?.passwordHash ?? null, body.password)
    if (user === null || !matches || user.status !== 'active') {
      await this.throttle.failed(body.email, client.address)
      throw invalidCredentials()
    }
    if (user.totpSecret !== null) {
      if (body.code === undefined || body.code === '') throw new AppError('CODE_REQUIRED', 'This account signs in with a two-factor code: send it as code.')
      if (!await this.codeAccepted(user, body.code)) {
        await this.throttle.failed(body.email, client.address)
        throw invalidCredentials()
      }
    }
    await this.throttle.succeeded(body.email)
    return await this.store.transaction(async uow => await this.startSession(uow, user, 'password', client), { actor: actorOf(personPrincipal(personOf(user, null))) })
  }

  /** One password hash comparison, counted. */
  private async passwordMatches (stored: string | null, password: string): Promise<boolean> {
    this.verifications.inc()
    return await passwordMatches(stored, password)
  }

  /** A TOTP code (once in its window) or an unused recovery code. */
  private async codeAccepted (user: UserRecord, code: string): Promise<boolean> {
    const trimmed = code.replace(/\s+/g, '')
    if (/^[0-9]{6}$/.test(trimmed)) {
      const step = await totpStep(user.totpSecret!, trimmed, this.clock.now(), user.totpLastStep)
      return step !== null && await this.store.transaction(async uow => await uow.identity.useTotpStep(user.id, step))
    }
    return await this.store.transaction(async uow => await uow.identity.useRecoveryCode(user.id, recoveryCodeHash(code), this.clock.now()))
  }

  async passkeySignIn (response: AuthenticationResponseJSON, client: Client): Promise<SessionStart> {
    const userId = await this.passkeys.authenticate(response)
    const user = await this.store.identity.userById(userId)
    if (user === null || user.status !== 'active') throw invalidCredentials()
    return await this.store.transaction(async uow => await this.startSession(uow, user, 'passkey', client), { actor: actorOf(personPrincipal(personOf(user, null))) })
  }

  /**
   * A new pair for a refresh token, which is spent. A spent one presented again ends its whole
   * session (every token of that sign-in), answers 401 SESSION_REVOKED and emits
   * `session.reuse_detected`: someone else has a copy.
   */
  async refresh (refreshToken: string): Promise<SessionStart> {
    const hash = hashSecret(refreshToken)
    const found = await this.store.identity.refreshToken(hash)
    if (found === null) throw sessionRevoked()
    const session = await this.store.identity.session(found.sessionId)
    const now = this.clock.now()
    if (session === null || session.endedAt !== null || Date.parse(session.expiresAt) <= now.getTime()) throw sessionRevoked()
    const user = await this.store.identity.userById(session.userId)
    if (user === null || user.status !== 'active') throw sessionRevoked()
    const next = token(32)
    const outcome = await this.store.transaction(async uow => {
      if (found.spent || !await uow.identity.spendRefreshToken(hash, hashSecret(next), session.id, this.sessionEnd(now), now)) {
        await this.endSessions(uow, await uow.identity.endSessions({ sessionId: session.id }, now))
        uow.events.record({ type: 'session.reuse_detected', data: { session_id: session.id, user_id: user.id, user_agent: session.userAgent }, owner: user.slug, public: false })
        return null
      }
      await uow.identity.touchUser(user.id, now)
      return await uow.identity.session(session.id)
    }, { actor: actorOf(personPrincipal(personOf(user, session.id))) })
    if (outcome === null) throw new AppError('SESSION_REVOKED', 'This refresh token was used before: the session is ended. Sign in again.')
    const access = await this.keys.sign(personOf(user, session.id), user.generation)
    return { accessToken: access.token, expiresIn: access.expiresIn, refreshToken: next, session: outcome!, user }
  }

  private async endSessions (uow: UnitOfWork, ids: readonly string[]): Promise<void> {
    for (const id of ids) await this.revocations.endSession(uow, id)
  }

  async sessions (person: Person): Promise<SessionRecord[]> {
    return await this.store.identity.liveSessions(person.id, this.clock.now())
  }

  /** Ends one of the person's sessions (`current`: the one their token is from). */
  async endSession (person: Person, id: string, actor: Principal): Promise<void> {
    const sessionId = id === 'current' ? person.sessionId : id
    const session = sessionId === null ? null : await this.store.identity.session(sessionId)
    if (session === null || session.userId !== person.id || session.endedAt !== null) throw new AppError('SESSION_NOT_FOUND', `You have no live session ${id}.`)
    await this.store.transaction(async uow => {
      await this.endSessions(uow, await uow.identity.endSessions({ sessionId: session.id }, this.clock.now()))
    }, { actor: actorOf(actor) })
  }

  /** Ends a session by its refresh token (signing out with the cookie alone); nothing when unknown. */
  async endByRefreshToken (refreshToken: string): Promise<void> {
    const found = await this.store.identity.refreshToken(hashSecret(refreshToken))
    if (found === null) return
    await this.store.transaction(async uow => {
      await this.endSessions(uow, await uow.identity.endSessions({ sessionId: found.sessionId }, this.clock.now()))
    })
  }

  // Passwords

  async changePassword (person: Person, body: { current_password: string, password: string }, client: Client): Promise<void> {
    const user = await this.user(person.id)
    await this.throttle.check(user.email ?? user.id, client.address)
    if (!await this.passwordMatches(user.passwordHash, body.current_password)) {
      await this.throttle.failed(user.email ?? user.id, client.address)
      throw new AppError('WRONG_PASSWORD', 'The current password is not right.')
    }
    await checkPassword(body.password, 'password', user)
    const hash = await hashPassword(body.password)
    await this.store.transaction(async uow => {
      const after = await uow.identity.updateUser(user, { passwordHash: hash }, this.clock.now())
      if (after === null) throw new AppError('CONFLICT', 'Your account changed meanwhile: try again.')
      await this.endSessions(uow, await uow.identity.endSessions({ userId: user.id, except: person.sessionId ?? undefined }, this.clock.now()))
    }, { actor: actorOf(personPrincipal(person)) })
  }

  async createReset (userId: string, actor: Principal): Promise<{ token: string, expiresAt: Date }> {
    await this.user(userId)
    const t = token(32)
    const expiresAt = new Date(this.clock.now().getTime() + RESET_MS)
    await this.store.transaction(async uow => { await uow.identity.insertReset(hashSecret(t), userId, expiresAt, this.clock.now()) }, { actor: actorOf(actor) })
    return { token: t, expiresAt }
  }

  /** Sets the password a reset link was for: every session of that user ends. An inactive profile becomes active. */
  async useReset (body: { token: string, password: string }): Promise<void> {
    const hash = hashSecret(body.token)
    const pending = await this.store.transaction(async uow => {
      const userId = await uow.identity.useReset(hash, this.clock.now())
      return userId === null ? null : await uow.identity.userById(userId)
    })
    if (pending === null) throw new AppError('RESET_NOT_FOUND', 'This password reset does not exist, was used, or has expired.')
    await checkPassword(body.password, 'password', pending)
    const passwordHash = await hashPassword(body.password)
    await this.store.transaction(async uow => {
      const user = await uow.identity.userById(pending.id)
      if (user === null) throw new AppError('RESET_NOT_FOUND', 'This password reset\'s user no longer exists.')
      const status = user.status === 'inactive' && user.email !== null ? 'active' : user.status
      const after = await uow.identity.updateUser(user, { passwordHash, status }, this.clock.now())
      if (after === null) throw new AppError('CONFLICT', 'The account changed meanwhile: try again.')
      await this.endSessions(uow, await uow.identity.endSessions({ userId: user.id }, this.clock.now()))
      if (after.status !== user.status) {
        await this.revocations.userChanged(uow, after.id, after.generation)
        uow.events.record(userEvent('user.updated', after))
      }
    })
  }

  // Two-factor codes

  async beginTwoFactor (person: Person): Promise<{ secret: string, otpauthUrl: string }> {
    const user = await this.user(person.id)
    if (user.totpSecret !== null) throw new AppError('TWO_FACTOR_ON', 'Two-factor codes are already on for this account: turn them off first.')
    const secret = newTotpSecret()
    await this.store.transaction(async uow => {
      if (await uow.identity.updateUser(user, { totpPending: secret }, this.clock.now()) === null) throw new AppError('CONFLICT', 'Your account changed meanwhile: try again.')
    }, { actor: actorOf(personPrincipal(person)) })
    return { secret, otpauthUrl: otpauthUrl(new URL(this.config.publicBaseUrl).host, user.email ?? user.slug, secret) }
  }

  async confirmTwoFactor (person: Person, code: string): Promise<string[]> {
    const user = await this.user(person.id)
    if (user.totpPending === null) throw new AppError('TWO_FACTOR_NOT_STARTED', 'Ask for a secret first (POST /users/me/two-factor).')
    const step = await totpStep(user.totpPending, code.replace(/\s+/g, ''), this.clock.now(), user.totpLastStep)
    if (step === null) throw invalidCredentials()
    const codes = newRecoveryCodes()
    await this.store.transaction(async uow => {
      const after = await uow.identity.updateUser(user, { totpSecret: user.totpPending, totpPending: null }, this.clock.now())
      if (after === null) throw new AppError('CONFLICT', 'Your account changed meanwhile: try again.')
      await uow.identity.useTotpStep(user.id, step)
      await uow.identity.replaceRecoveryCodes(user.id, codes.map(recoveryCodeHash))
    }, { actor: actorOf(personPrincipal(person)) })
    return codes
  }

  async disableTwoFactor (person: Person, code: string): Promise<void> {
    const user = await this.user(person.id)
    if (user.totpSecret === null) throw new AppError('TWO_FACTOR_OFF', 'Two-factor codes are not on for this account.')
    if (!await this.codeAccepted(user, code)) throw invalidCredentials()
    await this.store.transaction(async uow => {
      const fresh = await uow.identity.userById(user.id)
      if (fresh === null || await uow.identity.updateUser(fresh, { totpSecret: null, totpPending: null }, this.clock.now()) === null) throw new AppError('CONFLICT', 'Your account changed meanwhile: try again.')
      await uow.identity.replaceRecoveryCodes(user.id, [])
    }, { actor: actorOf(personPrincipal(person)) })
  }

  // Passkeys of the signed-in person

  async passkeyOptions (person: Person): Promise<unknown> {
    return await this.passkeys.registrationOptions(await this.user(person.id))
  }

  async addPasskey (person: Person, body: { name?: string, response: RegistrationResponseJSON }): Promise<PasskeyRecord> {
    return await this.passkeys.register(await this.user(person.id), body.response, body.name)
  }

  // Invitations

  /** `admin`: any role but owner; `editor`: contributors and authors. */
  async invite (inviter: Principal, body: { email: string, role: Role, name?: string }): Promise<{ invitation: InvitationRecord, token: string }> {
    const mayInvite = inviter.person === undefined
      ? inviter.scopes.has('admin')
      : roleMay(inviter.person.role, 'users.manage') || (roleMay(inviter.person.role, 'invitations.writers') && roleRank(body.role) <= roleRank('author'))
    if (body.role === 'owner') throw roleForbids('Nobody is invited as owner: the owner hands the ownership over (POST /users/{user_id}/ownership).')
    if (!mayInvite) throw roleForbids(`Your role may not invite ${body.role}s: that needs the ${roleRank(body.role) <= roleRank('author') ? ROLE_ACTIONS['invitations.writers'].least : ROLE_ACTIONS['users.manage'].least} role${inviter.person !== undefined && roleMay(inviter.person.role, 'invitations.writers') ? ' (editors invite contributors and authors)' : ''}.`)
    const existing = await this.store.identity.userByEmail(body.email)
    if (existing !== null && existing.status !== 'inactive') throw new AppError('EMAIL_TAKEN', 'An active user already has this email.')
    const t = token(32)
    const invitation = await this.store.transaction(async uow => await uow.identity.insertInvitation({
      id: token(16),
      tokenHash: hashSecret(t),
      email: body.email.trim(),
      role: body.role,
      name: body.name ?? null,
      invitedBy: inviter.person?.id ?? inviter.subject,
      expiresAt: new Date(this.clock.now().getTime() + INVITATION_MS),
    }, this.clock.now()), { actor: actorOf(inviter) })
    return { invitation, token: t }
  }

  /**
   * Makes the invited user, active with the invited role, and signs them in. The password is
   * checked and hashed first (hashing takes a while, outside any unit); the invitation is then
   * taken for its one use in the unit that makes the user.
   */
  async acceptInvitation (body: { token: string, name: string, password: string }, client: Client): Promise<SessionStart> {
    const hash = hashSecret(body.token)
    const notFound = () => new AppError('INVITATION_NOT_FOUND', 'This invitation does not exist, was used or revoked, or has expired.')
    const open = await this.store.identity.openInvitation(hash, this.clock.now())
    if (open === null) throw notFound()
    await checkPassword(body.password, 'password', { email: open.email, name: body.name })
    const passwordHash = await hashPassword(body.password)
    return await this.store.transaction(async uow => {
      const invitation = await uow.identity.acceptInvitation(hash, this.clock.now())
      if (invitation === null) throw notFound()
      const user = await this.createUser(uow, { email: invitation.email, name: body.name, role: invitation.role, passwordHash, status: 'active' })
      return await this.startSession(uow, user, 'invitation', client)
    })
  }

  async invitations (): Promise<InvitationRecord[]> {
    return await this.store.identity.openInvitations(this.clock.now())
  }

  async revokeInvitation (id: string, actor: Principal): Promise<void> {
    const done = await this.store.transaction(async uow => await uow.identity.revokeInvitation(id, this.clock.now()), { actor: actorOf(actor) })
    if (!done) throw new AppError('INVITATION_NOT_FOUND', `No open invitation ${id} exists.`)
  }

  // Users

  /**
   * A person's public profile by slug, for the reading site: `{ profile }` (no email, role or
   * status), `{ movedTo }` for a former slug, or null.
   */
  async profile (slug: string): Promise<{ readonly profile: PublicProfile } | { readonly movedTo: string } | null> {
    const user = await this.store.identity.userBySlug(slug)
    if (user === null) {
      const moved = await this.store.identity.userByAlias(slug)
      return moved === null ? null : { movedTo: moved.slug }
    }
    return { profile: { id: user.id, slug: user.slug, name: user.name, bio: user.bio, website: user.website, avatar: user.avatar } }
  }

  /** The public profiles of these slugs (current ones), by slug. */
  async profiles (slugs: readonly string[]): Promise<ReadonlyMap<string, PublicProfile>> {
    const out = new Map<string, PublicProfile>()
    for (const slug of new Set(slugs)) {
      const u = await this.store.identity.userBySlug(slug)
      if (u !== null) out.set(slug, { id: u.id, slug: u.slug, name: u.name, bio: u.bio, website: u.website, avatar: u.avatar })
    }
    return out
  }

  async user (id: string): Promise<UserRecord> {
    const user = await this.store.identity.userById(id)
    if (user === null) throw userNotFound(id)
    return user
  }

  /**
   * A change a client asked for (`PATCH /users/…`): who may change whom and what (oneself but for
   * role and status, anyone by an admin; the owner protected), a slug and an email unique among
   * users, then the change itself (`changeUser`). Null when the user changed meanwhile.
   */
  async editUser (uow: UnitOfWork, viewer: Principal, before: UserRecord, body: UserEdit): Promise<UserRecord | null> {
    checkChange(viewer, before, body)
    if (body.slug !== undefined && body.slug !== before.slug && await uow.identity.slugTaken(body.slug)) {
      const owner = await uow.identity.userByAlias(body.slug)
      if (owner?.id !== before.id) throw new AppError('USER_SLUG_TAKEN', `Another user has (or had) the slug "${body.slug}".`)
    }
    if (body.email !== undefined && body.email.toLowerCase() !== before.email) {
      const holder = await uow.identity.userByEmail(body.email)
      if (holder !== null && holder.id !== before.id) throw new AppError('EMAIL_TAKEN', 'Another user has this email.')
    }
    // Every field a client may send is one the store writes as given.
    return await this.changeUser(uow, before, { ...body })
  }

  /**
   * Writes a change to a user in `uow` (compare and set on its revision), recording its event; a
   * change that ends their tokens (role, status, slug, name) is sent to every instance, and a
   * suspension ends every session of theirs.
   */
  async changeUser (uow: UnitOfWork, before: UserRecord, changes: UserChanges): Promise<UserRecord | null> {
    const after = await uow.identity.updateUser(before, changes, this.clock.now())
    if (after === null) return null
    if (after.generation !== before.generation) await this.revocations.userChanged(uow, after.id, after.generation)
    if (after.status === 'suspended' && before.status !== 'suspended') {
      await this.endSessions(uow, await uow.identity.endSessions({ userId: after.id }, this.clock.now()))
      uow.events.record(userEvent('user.suspended', after))
    } else {
      uow.events.record(userEvent('user.updated', after))
    }
    return after
  }

  /** Ends every token of a user who is deleted. */
  async userDeleted (uow: UnitOfWork, user: UserRecord): Promise<void> {
    await this.endSessions(uow, await uow.identity.endSessions({ userId: user.id }, this.clock.now()))
    await this.revocations.userChanged(uow, user.id, user.generation + 1)
    uow.events.record(userEvent('user.deleted', user))
  }
}

/** Who may be changed by whom: oneself (but for role and status), or anyone by an admin; the owner is protected. */
function checkChange (viewer: Principal, target: UserRecord, body: UserEdit): void {
  const self = viewer.person?.id === target.id
  const admin = isAdmin(viewer)
  if (!self && !admin) throw roleForbids('Only an admin changes another user.')
  if ((body.role !== undefined && body.role !== target.role) || (body.status !== undefined && body.status !== target.status)) {
    if (!admin) throw roleForbids('Only an admin changes a role or a status.')
    if (body.role === 'owner') throw new AppError('OWNER_PROTECTED', 'The owner is made by the ownership transfer (POST /users/{user_id}/ownership), not by a change of role.')
    if (target.role === 'owner') throw new AppError('OWNER_PROTECTED', 'The owner cannot be suspended or demoted: the owner first hands the ownership over.')
  }
  if (body.status === 'active' && target.status === 'inactive' && (body.email ?? target.email) === null) {
    throw validationFailed([fieldError('status', 'INVALID_VALUE', 'An inactive profile becomes active once it has an email (and then a password, through a reset link or an invitation).')])
  }
}

/** The set-up link's token, derived from the deployment's server secret: the same on every instance and at every start. */
export function setupTokenOf (serverSecret: Buffer): string {
  return createHmac('sha256', serverSecret).update('people: set-up').digest('base64url')
}

/** Compares in constant time (equal-length digests of both). */
function safeEqual (a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
}
