import type {
  AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON,
} from '@simplewebauthn/server'
import ipaddr from 'ipaddr.js'
import type { Clock } from '../../clock.ts'
import { loadOnce } from '../../load-once.ts'
import { AppError } from '../../errors.ts'
import type { Store } from '../../store/store.ts'
import type { PasskeyRecord, UserRecord } from './store.ts'

/** A challenge may be answered once, within this time. */
const CHALLENGE_MS = 5 * 60_000
const RP_NAME = 'Blog'

export function passkeyRejected (why: string): AppError {
  return new AppError('PASSKEY_REJECTED', `The passkey's answer was not accepted: ${why}.`)
}

/**
 * The relying party: the host of PUBLIC_BASE_URL, or `localhost` when that host is a loopback
 * address (browsers refuse an IP address as one); the origins accepted, that of PUBLIC_BASE_URL
 * and, on loopback, `http://localhost:PORT`.
 */
export function relyingParty (publicBaseUrl: string, port: number): { id: string, origins: string[] } {
  const url = new URL(publicBaseUrl)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const loopback = host === 'localhost' || (ipaddr.isValid(host) && ipaddr.parse(host).range() === 'loopback')
  if (!loopback) return { id: host, origins: [url.origin] }
  return { id: 'localhost', origins: [...new Set([url.origin, `http://localhost:${url.port === '' ? port : url.port}`, `http://localhost:${port}`])] }
}

/**
 * @simplewebauthn/server, loaded with the first ceremony: it and the ASN.1 and CBOR code it brings
 * are memory (with the common-password lists, 1.5 MiB of the resident set at start) that an
 * instance nobody registers a passkey on never needs.
 */
const webauthn = loadOnce(async () => await import('@simplewebauthn/server'))

/** WebAuthn through @simplewebauthn/server: the ceremonies' options, their answers checked, single-use challenges in the store. */
export class Passkeys {
  constructor (private readonly store: Store, private readonly clock: Clock, private readonly rp: { id: string, origins: string[] }) {}

  private expiry (): Date {
    return new Date(this.clock.now().getTime() + CHALLENGE_MS)
  }

  /** Takes the challenge an answer names for its one use (an unknown, used or late one is refused). */
  private async consume (challenge: string, purpose: string, userId: string | null): Promise<boolean> {
    const taken = await this.store.transaction(async uow => await uow.identity.useChallenge(challenge, purpose, this.clock.now()))
    return taken !== undefined && taken.userId === userId
  }

  async registrationOptions (user: UserRecord): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const existing = await this.store.identity.passkeysOf(user.id)
    const options = await (await webauthn()).generateRegistrationOptions({
      rpName: RP_NAME,
      rpID: this.rp.id,
      userName: user.email ?? user.slug,
      userID: new TextEncoder().encode(user.id),
      userDisplayName: user.name,
      attestationType: 'none',
      excludeCredentials: existing.map(p => ({ id: p.id, transports: [...p.transports] })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    })
    await this.store.transaction(async uow => { await uow.identity.addChallenge(options.challenge, user.id, 'register', this.expiry()) })
    return options
  }

  /** Checks a registration's answer; the passkey to keep. */
  async register (user: UserRecord, response: RegistrationResponseJSON, name: string | undefined): Promise<PasskeyRecord> {
    let verified
    try {
      verified = await (await webauthn()).verifyRegistrationResponse({
        response,
        expectedChallenge: async c => await this.consume(c, 'register', user.id),
        expectedOrigin: this.rp.origins,
        expectedRPID: this.rp.id,
        requireUserVerification: false,
      })
    } catch (err) {
      throw passkeyRejected(err instanceof Error ? err.message.replace(/\.$/, '') : 'it could not be read')
    }
    if (!verified.verified) throw passkeyRejected('its attestation did not verify')
    const { credential } = verified.registrationInfo
    return await this.store.transaction(async uow => await uow.identity.insertPasskey({
      id: credential.id,
      userId: user.id,
      name: name ?? `Passkey ${new Date(this.clock.now()).toISOString().slice(0, 10)}`,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: credential.transports ?? [],
    }, this.clock.now()))
  }

  /** A sign-in's options: no `allowCredentials`, so a discoverable passkey chooses the account. */
  async authenticationOptions (): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const options = await (await webauthn()).generateAuthenticationOptions({ rpID: this.rp.id, userVerification: 'preferred' })
    await this.store.transaction(async uow => { await uow.identity.addChallenge(options.challenge, null, 'sign-in', this.expiry()) })
    return options
  }

  /** Checks a sign-in's answer: the passkey's owner's id. */
  async authenticate (response: AuthenticationResponseJSON): Promise<string> {
    const passkey = typeof response?.id === 'string' ? await this.store.identity.passkey(response.id) : null
    if (passkey === null) throw passkeyRejected('no account has this passkey')
    let verified
    try {
      verified = await (await webauthn()).verifyAuthenticationResponse({
        response,
        expectedChallenge: async c => await this.consume(c, 'sign-in', null),
        expectedOrigin: this.rp.origins,
        expectedRPID: this.rp.id,
        credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: passkey.counter, transports: [...passkey.transports] },
        requireUserVerification: false,
      })
    } catch (err) {
      throw passkeyRejected(err instanceof Error ? err.message.replace(/\.$/, '') : 'it could not be read')
    }
    if (!verified.verified) throw passkeyRejected('its signature did not verify')
    const next = verified.authenticationInfo.newCounter
    // A counter must move forward (both zero: an authenticator that keeps none).
    if (!(next === 0 && passkey.counter === 0) && next <= passkey.counter) throw passkeyRejected('its signature counter went backwards')
    const moved = await this.store.transaction(async uow => await uow.identity.usePasskey(passkey.id, passkey.counter, next, this.clock.now()))
    if (!moved) throw passkeyRejected('its signature counter went backwards')
    return passkey.userId
  }
}
