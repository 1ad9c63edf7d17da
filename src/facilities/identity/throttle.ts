import type { Clock } from '../../clock.ts'
import { AppError } from '../../errors.ts'
import type { Store } from '../../store/store.ts'
import type { IdentitySettings } from './settings.ts'

/** Failures count within this window. */
const WINDOW_MS = 15 * 60_000
const FIRST_BLOCK_S = 60
const LONGEST_BLOCK_S = 3600

/**
 * The sign-in throttle: failed attempts counted per email and per client address in the store, so
 * that it holds across instances. Once a key has had its count of failures in 15 minutes, it is
 * refused for 60 s, doubling with each further failure up to an hour, until a success clears it.
 * A refused attempt is answered before any password is compared.
 */
export class SignInThrottle {
  constructor (private readonly store: Store, private readonly clock: Clock, private readonly settings: IdentitySettings) {}

  private keys (email: string, address: string): [string, string] {
    return [`email:${email.trim().toLowerCase()}`, `address:${address}`]
  }

  /** Throws 429 SIGN_IN_THROTTLED (with Retry-After) when either key is blocked now. */
  async check (email: string, address: string): Promise<void> {
    const now = this.clock.now()
    let until = 0
    for (const t of await this.store.identity.blockedUntil(this.keys(email, address))) if (t !== null) until = Math.max(until, Date.parse(t))
    if (until > now.getTime()) throw throttled(Math.ceil((until - now.getTime()) / 1000))
  }

  /** Counts a failure for both keys; blocks a key whose count reached its limit. */
  async failed (email: string, address: string): Promise<void> {
    const now = this.clock.now()
    const windowStart = new Date(now.getTime() - WINDOW_MS)
    const [byEmail, byAddress] = this.keys(email, address)
    await this.store.transaction(async uow => {
      for (const [key, limit] of [[byEmail, this.settings.emailFailures], [byAddress, this.settings.addressFailures]] as const) {
        const failures = await uow.identity.countFailure(key, now, windowStart)
        if (failures >= limit) {
          const seconds = Math.min(LONGEST_BLOCK_S, FIRST_BLOCK_S * 2 ** Math.min(failures - limit, 12))
          await uow.identity.block(key, new Date(now.getTime() + seconds * 1000))
        }
      }
    })
  }

  /** A success clears the email's count (the address's stays: one success does not excuse many failures). */
  async succeeded (email: string): Promise<void> {
    await this.store.identity.clearFailures([this.keys(email, '')[0]])
  }
}

function throttled (seconds: number): AppError {
  return new AppError('SIGN_IN_THROTTLED', `Too many failed sign-ins: try again in ${seconds} s.`, { headers: { 'retry-after': String(seconds) } })
}
