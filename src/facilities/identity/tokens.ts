import { randomBytes } from 'node:crypto'
import { exportJWK, importJWK, type JWK, jwtVerify, SignJWT, generateKeyPair, decodeProtectedHeader, errors as joseErrors, type CryptoKey } from 'jose'
import type { Clock } from '../../clock.ts'
import type { Person } from '../../domain/principal.ts'
import { isRole } from '../../domain/roles.ts'
import type { Store } from '../../store/store.ts'

/** An access token lives this long (seconds). */
export const ACCESS_TOKEN_S = 900
const ALG = 'ES256'
/** Our keys' ids start so: a token whose `kid` does not is someone else's (AUTH_JWT_*). */
const KID_PREFIX = 'blog-'

interface SigningKey {
  readonly kid: string
  readonly privateKey: CryptoKey | null
  readonly publicKey: CryptoKey
  readonly publicJwk: JWK
  readonly retiredAt: string | null
}

/** What an access token says, once verified. */
export interface AccessClaims {
  readonly person: Person
  /** The user's generation when it was made: a later change of role, status or slug refuses it. */
  readonly generation: number
  readonly exp: number
}

/** Whether a bearer token is one of ours (its key id), without verifying it. */
export function isServiceToken (token: string): boolean {
  try {
    const kid = decodeProtectedHeader(token).kid
    return typeof kid === 'string' && kid.startsWith(KID_PREFIX)
  } catch {
    return false
  }
}

export class TokenRefused extends Error {}

/**
 * The service's signing keys (ES256), made by the service and shared through the store: the
 * newest signs; every key not yet pruned verifies and is listed in the JWKS, so a rotation leaves
 * the previous public key listed until every token it signed has expired.
 */
export class SigningKeys {
  private keys: SigningKey[] = []
  private loadedAt = 0

  constructor (private readonly store: Store, private readonly clock: Clock, private readonly issuer: string) {}

  /** Loads the keys, making the first when there is none (two instances starting at once: one wins, both use it). */
  async load (): Promise<void> {
    if ((await this.store.identity.signingKeys()).length === 0) {
      try {
        await this.add(false)
      } catch {
        // Another instance made it first (same moment, the unique kid aside): use theirs.
      }
    }
    await this.reload()
  }

  /** Makes a new key that signs from now on; the others stay listed (and verify) until pruned. */
  async rotate (): Promise<void> {
    await this.add(true)
    // Keys retired before every token they signed has expired are kept; older ones go.
    await this.store.identity.pruneSigningKeys(new Date(this.clock.now().getTime() - 2 * ACCESS_TOKEN_S * 1000))
    await this.reload()
  }

  private async add (retireOthers: boolean): Promise<void> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true })
    const kid = `${KID_PREFIX}${randomBytes(9).toString('base64url')}`
    const privateJwk = JSON.stringify({ ...await exportJWK(privateKey), kid, alg: ALG })
    const publicJwk = JSON.stringify({ ...await exportJWK(publicKey), kid, alg: ALG, use: 'sig' })
    await this.store.transaction(async uow => { await uow.identity.addSigningKey({ kid, privateJwk, publicJwk }, this.clock.now(), retireOthers) })
  }

  async reload (): Promise<void> {
    const rows = await this.store.identity.signingKeys()
    this.keys = await Promise.all(rows.map(async r => {
      const publicJwk = JSON.parse(r.publicJwk) as JWK
      return {
        kid: r.kid,
        privateKey: r.retiredAt === null ? await importJWK(JSON.parse(r.privateJwk) as JWK, ALG) as CryptoKey : null,
        publicKey: await importJWK(publicJwk, ALG) as CryptoKey,
        publicJwk,
        retiredAt: r.retiredAt,
      }
    }))
    this.loadedAt = Date.now()
  }

  /** The public keys, as `/.well-known/jwks.json` lists them. */
  jwks (): { keys: JWK[] } {
    return { keys: this.keys.map(k => k.publicJwk) }
  }

  async sign (person: Person, generation: number): Promise<{ token: string, expiresIn: number }> {
    const key = this.keys.find(k => k.privateKey !== null)
    if (key === undefined) throw new Error('no signing key: load() was not called')
    const now = Math.floor(this.clock.now().getTime() / 1000)
    const token = await new SignJWT({ sid: person.sessionId, gen: generation, role: person.role, slug: person.slug, name: person.name })
      .setProtectedHeader({ alg: ALG, kid: key.kid, typ: 'at+jwt' })
      .setIssuer(this.issuer)
      .setSubject(person.id)
      .setIssuedAt(now)
      .setExpirationTime(now + ACCESS_TOKEN_S)
      .setJti(randomBytes(12).toString('base64url'))
      .sign(key.privateKey!)
    return { token, expiresIn: ACCESS_TOKEN_S }
  }

  /** Verifies one of our access tokens: what it says, or TokenRefused with why. */
  async verify (token: string): Promise<AccessClaims> {
    let kid: string | undefined
    try {
      kid = decodeProtectedHeader(token).kid
    } catch {
      throw new TokenRefused('The token is not a JWT.')
    }
    let key = this.keys.find(k => k.kid === kid)
    // A key another instance made since (a rotation): look again, at most once a second.
    if (key === undefined && Date.now() - this.loadedAt > 1000) {
      await this.reload()
      key = this.keys.find(k => k.kid === kid)
    }
    if (key === undefined) throw new TokenRefused('The token is not signed by a key of this service.')
    try {
      const { payload } = await jwtVerify(token, key.publicKey, { algorithms: [ALG], issuer: this.issuer, currentDate: this.clock.now(), requiredClaims: ['exp', 'sub', 'sid', 'gen'], typ: 'at+jwt' })
      const role = payload.role
      if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.gen !== 'number' || !isRole(role) ||
        typeof payload.slug !== 'string' || typeof payload.name !== 'string') throw new TokenRefused('The token\'s claims are not this service\'s.')
      return { person: { id: payload.sub, slug: payload.slug, name: payload.name, role, sessionId: payload.sid }, generation: payload.gen, exp: payload.exp! }
    } catch (err) {
      if (err instanceof TokenRefused) throw err
      if (err instanceof joseErrors.JWTExpired) throw new TokenRefused('The token has expired.')
      throw new TokenRefused('The token is not valid.')
    }
  }
}
