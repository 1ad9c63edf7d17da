import { createHash, randomBytes } from 'node:crypto'
import { generateSecret, generateURI, verify } from 'otplib'

/** RFC 6238 as authenticator apps expect it: 30 s steps, 6 digits, SHA-1. */
const PERIOD = 30

export function newTotpSecret (): string {
  return generateSecret()
}

export function otpauthUrl (issuer: string, label: string, secret: string): string {
  return generateURI({ issuer, label, secret, algorithm: 'sha1', digits: 6, period: PERIOD })
}

/**
 * The time step a code is valid for at `now` (one step of drift either way), or null. A step
 * already used (`afterStep` or before) is refused: a code works once.
 */
export async function totpStep (secret: string, code: string, now: Date, afterStep: number): Promise<number | null> {
  if (!/^[0-9]{6}$/.test(code)) return null
  const result = await verify({ secret, token: code, epoch: Math.floor(now.getTime() / 1000), epochTolerance: PERIOD, afterTimeStep: afterStep, algorithm: 'sha1', digits: 6, period: PERIOD })
  return result.valid && 'timeStep' in result ? result.timeStep : null
}

/** Ten single-use recovery codes, shown once; the store keeps their hashes. */
export function newRecoveryCodes (): string[] {
  return Array.from({ length: 10 }, () => {
    const s = randomBytes(8).toString('hex')
    return `${s.slice(0, 4)}-${s.slice(4, 8)}-${s.slice(8, 12)}-${s.slice(12)}`
  })
}

export function recoveryCodeHash (code: string): string {
  return createHash('sha256').update(code.trim().toLowerCase()).digest('hex')
}
