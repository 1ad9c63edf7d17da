import { AppError, fieldError } from '../../errors.ts'
import { loadOnce } from '../../load-once.ts'

export const PASSWORD_MIN = 12
export const PASSWORD_MAX = 256
/**
 * argon2id (the library's default algorithm) at OWASP's first recommendation: 19 MiB, 2 passes,
 * one lane. Hashed on libuv's threads, never on the event loop.
 */
const ARGON2 = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

/** The argon2 addon, loaded with the first hash: a native library an instance without passwords never needs. */
const argon2 = loadOnce(async () => await import('@node-rs/argon2'))

/**
 * The 10 000 most common passwords (the list is ordered by frequency), loaded with the first
 * password checked: memory (with WebAuthn's library, 1.5 MiB of the resident set at start)
 * that an instance nobody sets a password on never needs.
 */
const commonPasswords = loadOnce(async (): Promise<ReadonlySet<string>> => {
  const { dictionary } = await import('@zxcvbn-ts/language-common')
  return new Set((dictionary['passwords-common'] as readonly string[]).slice(0, 10_000))
})

/**
 * Refuses a password the rules do not allow (422, as a field error on `field`): 12–256
 * characters, no composition rule, not one of the 10 000 most common, not the email or name.
 */
export async function checkPassword (password: string, field: string, person: { email?: string | null, name?: string | null }): Promise<void> {
  const length = [...password].length
  const fail = (code: 'PASSWORD_TOO_SHORT' | 'PASSWORD_TOO_LONG' | 'PASSWORD_TOO_COMMON', detail: string) =>
    new AppError(code, detail, { errors: [fieldError(field, code, detail)] })
  if (length < PASSWORD_MIN) throw fail('PASSWORD_TOO_SHORT', `A password has at least ${PASSWORD_MIN} characters.`)
  if (length > PASSWORD_MAX) throw fail('PASSWORD_TOO_LONG', `A password has at most ${PASSWORD_MAX} characters.`)
  const folded = password.toLowerCase()
  const own = [person.email, person.email?.split('@')[0], person.name].filter((s): s is string => typeof s === 'string' && s !== '').map(s => s.toLowerCase())
  if ((await commonPasswords()).has(folded) || own.includes(folded)) throw fail('PASSWORD_TOO_COMMON', 'This password is too common, or is your email or name: choose another.')
}

export async function hashPassword (password: string): Promise<string> {
  return await (await argon2()).hash(password, ARGON2)
}

/**
 * Whether `password` is the one `stored` hashes. With no stored hash (an unknown email, a user
 * without a password) it still hashes once, against a hash of nothing anyone knows, so that the
 * answer takes about as long whichever the case.
 */
export async function passwordMatches (stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    await (await argon2()).verify(await decoy(), password).catch(() => false)
    return false
  }
  try {
    return await (await argon2()).verify(stored, password)
  } catch {
    return false
  }
}

/** A hash made once per process with the same cost, of a random secret. */
const decoy = loadOnce(async () => await (await argon2()).hash(crypto.randomUUID(), ARGON2))
