import { createHash, createPublicKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { createRemoteJWKSet, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose'
import { type Clock, systemClock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { hasScope, type Principal, type Viewer } from '../../domain/principal.ts'
import { scopesOfRole } from '../../domain/roles.ts'
import { AppError } from '../../errors.ts'
import type { ApiKeyStore } from '../../store/store.ts'
import { routeOf } from '../protocol/route.ts'
import { unavailable } from '../protocol/problems.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified caller, or null when the request carries no credential. */
    principal: Viewer
  }
  interface FastifyContextConfig {
    /** The scope a route needs; absent means anyone, credential or not (unless `requiresCredential`). */
    requiredScope?: string
    /** Other scopes that permit the route as well as `requiredScope`. */
    orScopes?: readonly string[]
    /** Any valid credential, whatever its scopes (the change stream: what it shows depends on who asks). */
    requiresCredential?: boolean
    /** Probes (health, readiness) answer the same whatever credential is sent. */
    ignoresCredentials?: boolean
  }
}

export const REALM = 'blog'
/** API keys look like `blog_<id>_<secret>`, so a key is never mistaken for a JWT (which has dots). */
const API_KEY = /^blog_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/
/** RFC 6750 §2.1: `Bearer` and one token68; anything else is not a bearer credential. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i
/** No real token is this long; refusing early bounds the work a forged one can cause. */
const MAX_TOKEN_LENGTH = 8192
/** How long, and how many, verified JWTs are remembered (see Authenticator.verified). */
const VERIFIED_TTL_MS = 60_000
const VERIFIED_MAX = 1000
export function hashSecret (secret: string): string {
  return createHash('sha256').update(secret).digest('hex')
}

/** Makes a new API key: the token to show once, and what the store keeps (no secret). */
export function generateApiKey (): { token: string, id: string, hash: string } {
  const id = randomBytes(8).toString('hex')
  const secret = randomBytes(32).toString('base64url')
  return { token: `blog_${id}_${secret}`, id, hash: hashSecret(secret) }
}

function invalidToken (detail: string): AppError {
  return new AppError('INVALID_TOKEN', detail, {
    headers: { 'www-authenticate': `Bearer realm="${REALM}", error="invalid_token", error_description="${detail.replaceAll('"', "'")}"` },
  })
}

export function unauthenticated (): AppError {
  return new AppError('UNAUTHENTICATED', undefined, { headers: { 'www-authenticate': `Bearer realm="${REALM}"` } })
}

/** RFC 6750 §3.1: a valid token without the scope the request needs. */
export function insufficientScope (scope: string): AppError {
  return new AppError('FORBIDDEN', `This action needs the "${scope}" scope.`, {
    headers: { 'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="${scope}"` },
  })
}

/** A person's role gives their scopes: one it does not give is the role's lack (ROLE_FORBIDS); any other credential's is its scope's. */
function lacking (principal: Principal, scope: string): AppError {
  const scopeError = insufficientScope(scope)
  const person = principal.person
  // A key of a person whose role has the scope lacks it itself.
  if (person === undefined || scopesOfRole(person.role).some(s => s === scope || s === 'admin')) return scopeError
  return new AppError('ROLE_FORBIDS', `Your role (${person.role}) does not give the "${scope}" scope this needs${scope === 'admin' ? ': that is the admin role\'s' : ''}.`, { headers: scopeError.headers })
}

/**
 * The identity provider's key set. jose caches it and, on a `kid` it does not know, fetches it
 * again (at most once per cooldown): that is how a key rotation is picked up. A key set that cannot
 * be fetched says nothing about the token, so it is 503 (retry), not 401.
 */
function keySetOf (url: string, cooldownMs: number): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(new URL(url), { cacheMaxAge: 10 * 60_000, cooldownDuration: cooldownMs, timeoutDuration: 5000 })
  return async (header, token) => {
    try {
      return await remote(header, token)
    } catch (err) {
      if (err instanceof joseErrors.JWKSNoMatchingKey || err instanceof joseErrors.JWKSMultipleMatchingKeys ||
        err instanceof joseErrors.JOSENotSupported || err instanceof joseErrors.JOSEAlgNotAllowed) throw err
      throw unavailable('SERVICE_UNAVAILABLE', 'The keys that verify tokens cannot be fetched from the identity provider.')
    }
  }
}

/**
 * People's credentials, when the service keeps people: the access tokens it signs itself, and the
 * API keys a person made, which act as them. Given by the composition root.
 */
export interface PeopleCredentials {
  /**
   * The person a token of the service is, or null when it is not one the service signed (another
   * issuer's JWT); throws an Error whose message says why a token of the service is refused.
   */
  authenticate (token: string): Promise<Principal | null>
  /** The person a key of theirs acts as (its scopes capped by their role); null when they may not sign in now. */
  keyPrincipal (userId: string, scopes: readonly string[]): Promise<Principal | null>
}

/** Verifies bearer credentials: people's tokens and keys, JWTs with the configured keys, API keys against the store. */
export class Authenticator {
  private readonly hsKey: Uint8Array | null
  private readonly publicKey: KeyObject | null
  private readonly jwks: JWTVerifyGetKey | null

  constructor (private readonly config: Config['auth'], private readonly keys: ApiKeyStore, private readonly clock: Clock = systemClock, private readonly people: PeopleCredentials | null = null) {
    this.hsKey = config.jwtSecret === null ? null : new TextEncoder().encode(config.jwtSecret)
    this.publicKey = config.jwtPublicKey === null ? null : createPublicKey(config.jwtPublicKey)
    this.jwks = config.jwksUrl === null ? null : keySetOf(config.jwksUrl, config.jwksCooldownS * 1000)
  }

  /** The principal for an Authorization header value; throws 401 problems for a bad credential. */
  async authenticate (header: string): Promise<Principal> {
    const m = BEARER.exec(header)
    if (!m) throw invalidToken('The Authorization header must be "Bearer <token>".')
    const token = m[1]!
    if (token.length > MAX_TOKEN_LENGTH) throw invalidToken('The token is too long.')
    const key = API_KEY.exec(token)
    if (key) return await this.apiKey(key[1]!, key[2]!)
    if (token.startsWith('blog_')) throw invalidToken('The API key is malformed.')
    return await this.jwt(token)
  }

  private async apiKey (id: string, secret: string): Promise<Principal> {
    const record = await this.keys.findById(id)
    const expected = Buffer.from(record?.hash ?? hashSecret('absent'), 'hex')
    const actual = Buffer.from(hashSecret(secret), 'hex')
    // Compare even when the key is unknown, so timing does not tell which ids exist.
    const same = timingSafeEqual(expected, actual)
    // One answer for unknown and revoked keys, so that a caller cannot learn which ids exist.
    if (!record || !same || record.revokedAt !== null) throw invalidToken('The API key is not valid (unknown or revoked).')
    if (record.userId !== null) {
      const person = await this.people?.keyPrincipal(record.userId, record.scopes)
      if (person == null) throw invalidToken('The API key is not valid: its user cannot sign in now.')
      return person
    }
    return { subject: record.name, scopes: new Set(record.scopes), kind: 'api-key' }
  }

  /**
   * JWTs that verified with a configured key (AUTH_JWT_SECRET, AUTH_JWT_PUBLIC_KEY), until they
   * expire (at most a minute): a client sends the same token with every request, and verifying it
   * (base64, JSON, an HMAC or signature through WebCrypto, claims) was a large share of a write's
   * cost. With a fixed key the verdict cannot change before `exp`; only successes are kept, so
   * every refusal is decided anew. Tokens checked against a JWKS are not kept: a rotation may
   * retire their key at any time.
   */
  private readonly verified = new Map<string, { principal: Principal, until: number }>()

  private async jwt (token: string): Promise<Principal> {
    const hit = this.verified.get(token)
    if (hit !== undefined) {
      if (this.clock.now().getTime() < hit.until) return hit.principal
      this.verified.delete(token)
    }
    // People's tokens after the cache of the identity provider's, so that a cached JWT costs one lookup.
    if (this.people !== null) {
      let person: Principal | null
      try {
        person = await this.people.authenticate(token)
      } catch (err) {
        if (err instanceof AppError) throw err
        throw invalidToken(err instanceof Error ? err.message : 'The token is not valid.')
      }
      if (person !== null) return person
    }
    return await this.verifyJwt(token)
  }

  private remember (token: string, principal: Principal, exp: number): void {
    const until = Math.min(exp * 1000, this.clock.now().getTime() + VERIFIED_TTL_MS)
    if (this.verified.size >= VERIFIED_MAX) this.verified.delete(this.verified.keys().next().value!)
    this.verified.set(token, { principal, until })
  }

  private async verifyJwt (token: string): Promise<Principal> {
    let alg: string | undefined
    try {
      alg = decodeProtectedHeader(token).alg
    } catch {
      throw invalidToken('The token is neither a JWT nor an API key.')
    }
    const options = {
      requiredClaims: ['exp', 'sub'],
      clockTolerance: this.config.clockToleranceS,
      currentDate: this.clock.now(),
      ...(this.config.issuer !== null ? { issuer: this.config.issuer } : {}),
      ...(this.config.audience !== null ? { audience: this.config.audience } : {}),
    }
    // A key set can drop a key (rotation) or become unreachable: its tokens are verified every time.
    let viaKeySet = false
    try {
      let payload
      if (alg === 'HS256' && this.hsKey) {
        payload = (await jwtVerify(token, this.hsKey, { ...options, algorithms: ['HS256'] })).payload
      } else if ((alg === 'RS256' || alg === 'ES256') && this.publicKey) {
        const allowed = this.publicKey.asymmetricKeyType === 'rsa' ? ['RS256'] : ['ES256']
        payload = (await jwtVerify(token, this.publicKey, { ...options, algorithms: allowed })).payload
      } else if ((alg === 'RS256' || alg === 'ES256') && this.jwks) {
        payload = (await jwtVerify(token, this.jwks, { ...options, algorithms: ['RS256', 'ES256'] })).payload
        viaKeySet = true
      } else {
        // `none`, and any algorithm no configured key is meant for: no algorithm confusion.
        throw invalidToken(`Tokens signed with ${alg ?? 'no algorithm'} are not accepted.`)
      }
      if (typeof payload.sub !== 'string' || payload.sub === '') throw invalidToken('The token has no subject.')
      // The subject becomes the owner of what it writes: text every store can hold (PostgreSQL refuses NUL).
      if (payload.sub.includes('\u0000') || !payload.sub.isWellFormed()) throw invalidToken('The token\'s subject is not valid text.')
      const scope = typeof payload.scope === 'string' ? payload.scope : ''
      const principal: Principal = { subject: payload.sub, scopes: new Set(scope.split(' ').filter(Boolean)), kind: 'jwt' }
      if (typeof payload.exp === 'number' && !viaKeySet) this.remember(token, principal, payload.exp)
      return principal
    } catch (err) {
      if (err instanceof AppError) throw err
      if (err instanceof joseErrors.JWTExpired) throw invalidToken('The token has expired.')
      if (err instanceof joseErrors.JWTClaimValidationFailed) throw invalidToken(`The token's "${err.claim}" claim is not acceptable.`)
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) throw invalidToken('The token signature does not verify.')
      if (err instanceof joseErrors.JWKSNoMatchingKey) throw invalidToken('The token is not signed by a key of the identity provider.')
      if (err instanceof joseErrors.JOSEError) throw invalidToken('The token is not valid.')
      throw err
    }
  }
}

const CREDENTIAL_ERROR = Symbol('credentialError')
type WithCredentialError = FastifyRequest & { [CREDENTIAL_ERROR]?: AppError }

/**
 * Every request, before its body is read, in two steps with the rate limit between them, so that
 * failed credentials count against the caller's address like any anonymous request:
 * `authPlugin` verifies a credential, when present, into `req.principal` (remembering a bad one);
 * `authorizationPlugin` then answers 401 for a bad credential and checks the route's
 * `config.requiredScope`. The checks live here, not in handlers.
 */
export const authPlugin = fp(async function auth (app: FastifyInstance, opts: { authenticator: Authenticator }) {
  app.decorateRequest('principal', null)
  app.addHook('onRequest', (req: FastifyRequest, _reply, done) => {
    const header = req.headers.authorization
    // Most reads carry no credential: nothing to verify, and no promise to wait for.
    if (header === undefined || routeOf(req).config.ignoresCredentials === true) {
      done()
      return
    }
    opts.authenticator.authenticate(header).then(principal => {
      req.principal = principal
      done()
    }, (err: unknown) => {
      if (!(err instanceof AppError) || (err.code !== 'UNAUTHENTICATED' && err.code !== 'INVALID_TOKEN')) {
        done(err as Error)
        return
      }
      ;(req as WithCredentialError)[CREDENTIAL_ERROR] = err
      done()
    })
  })
}, { name: 'auth' })

export const authorizationPlugin = fp(async function authorization (app: FastifyInstance) {
  app.addHook('onRequest', (req: FastifyRequest, _reply, done) => {
    const bad = (req as WithCredentialError)[CREDENTIAL_ERROR]
    const { requiredScope: scope, requiresCredential, orScopes } = routeOf(req).config
    if (bad !== undefined) done(bad)
    else if (scope === undefined && requiresCredential !== true) done()
    else if (req.principal === null) done(unauthenticated())
    else if (scope !== undefined && !hasScope(req.principal, scope) && orScopes?.some(s => hasScope(req.principal, s)) !== true) done(lacking(req.principal, scope))
    else done()
  })
}, { name: 'authorization', dependencies: ['auth'] })
