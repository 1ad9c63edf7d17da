import { parseArgs, type ParseArgsConfig } from 'node:util'
import { fullFormats } from 'ajv-formats/dist/formats.js'
import { systemClock } from '../clock.ts'
import type { Config } from '../config.ts'
import { type Principal, SYSTEM_ACTOR } from '../domain/principal.ts'
import { isRole, ROLES } from '../domain/roles.ts'
import { AppError } from '../errors.ts'
import { checkPassword, hashPassword, IdentityService, type UserRecord } from '../facilities/identity/index.ts'
import type { ListQuery, Store } from '../store/store.ts'
import { readPassword } from './password-prompt.ts'

/** What the command line acts as towards the identity service: the service itself, with `admin`. */
const SYSTEM: Principal = Object.freeze({ subject: 'system', scopes: new Set(['admin']), kind: 'api-key' })

/** The check the API's `format: email` makes (ajv-formats' full format), and its 3–320 characters. */
const EMAIL = fullFormats.email as RegExp

/** A refusal: one line on standard error, and the exit code (2: bad arguments, 1: refused). */
class Refusal extends Error {
  constructor (message: string, readonly code: 1 | 2 = 1) { super(message) }
}

function emailOf (raw: string): string {
  const email = raw.trim().toLowerCase()
  if (email.length < 3 || email.length > 320 || !EMAIL.test(email)) throw new Refusal(`"${raw}" is not an email address`, 2)
  return email
}

/** `parseArgs`, an unknown or malformed option refused as a bad argument. */
function options<T extends ParseArgsConfig> (config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config)
  } catch (err) {
    throw new Refusal(err instanceof Error ? err.message : String(err), 2)
  }
}

/** The user `--email E`, `--id I` or a lone `<email-or-id>` names; refused when none is named, or nobody is. */
async function named (store: Store, args: string[]): Promise<UserRecord> {
  const { values, positionals } = options({ args, options: { email: { type: 'string' }, id: { type: 'string' } }, allowPositionals: true })
  const given = [values.email, values.id, ...positionals].filter(v => v !== undefined)
  if (given.length !== 1) throw new Refusal('name one user: --email E, --id I, or an email or id', 2)
  const [ref] = given as [string]
  const byEmail = values.email !== undefined || (values.id === undefined && ref.includes('@'))
  const user = byEmail ? await store.identity.userByEmail(emailOf(ref)) : await store.identity.userById(ref.trim())
  if (user === null) throw new Refusal(`no user ${byEmail ? 'with the email ' : ''}${ref}`)
  return user
}

async function create (store: Store, identity: IdentityService, args: string[]): Promise<number> {
  const { values } = options({ args, options: { email: { type: 'string' }, name: { type: 'string' }, role: { type: 'string' } } })
  if (values.email === undefined || values.name === undefined || values.role === undefined) throw new Refusal('--email, --name and --role are each needed', 2)
  const email = emailOf(values.email)
  const name = values.name.trim()
  if (name.length < 1 || [...name].length > 100) throw new Refusal('--name must be 1–100 characters', 2)
  const role = values.role
  if (!isRole(role)) throw new Refusal(`--role must be one of: ${ROLES.join(' ')}`, 2)
  const owned = 'The blog has an owner: another is made only by the owner handing the ownership over (POST /users/{user_id}/ownership).'
  if (role === 'owner' && !await identity.needsSetup()) throw new Refusal(owned)
  const existing = await store.identity.userByEmail(email)
  if (existing !== null && existing.status !== 'inactive') throw new Refusal('An active user already has this email.')

  const password = await readPassword(`Password for ${email}: `).catch((err: unknown) => { throw new Refusal(err instanceof Error ? err.message : String(err), 2) })
  if (password === null || password === '') throw new Refusal('no password was given (type it at the prompt, or pipe one line into standard input)', 2)
  await checkPassword(password, 'password', { email, name })
  const passwordHash = await hashPassword(password)
  const user = await store.transaction(async uow => {
    // Checked again inside the unit, as the set-up does: two at once make one owner.
    if (role === 'owner' && await uow.identity.ownerExists()) throw new Refusal(owned)
    return await identity.createUser(uow, { email, name, role, passwordHash })
  }, { actor: SYSTEM_ACTOR })
  process.stdout.write(`${user.id}\n`)
  process.stderr.write(`user ${user.email ?? ''} (${user.role}, slug ${user.slug}) made\n`)
  return 0
}

async function list (store: Store, args: string[]): Promise<number> {
  const { values } = options({ args, options: { json: { type: 'boolean' } } })
  const users: UserRecord[] = []
  for (let offset = 0; ; offset += 500) {
    // Sorted by name, then id (a unique key, as every page of a list ends with).
    const query: ListQuery<'name', object> = { filter: {}, sort: [{ key: 'name', direction: 'asc' }, { key: 'id' as 'name', direction: 'asc' }], limit: 500, offset }
    const page = await store.identity.listUsers(query)
    users.push(...page.items)
    if (!page.more) break
  }
  if (values.json === true) {
    process.stdout.write(JSON.stringify(users.map(u => ({ id: u.id, email: u.email, name: u.name, slug: u.slug, role: u.role, status: u.status, created_at: u.createdAt }))) + '\n')
    return 0
  }
  const rows = [['ID', 'EMAIL', 'NAME', 'SLUG', 'ROLE', 'STATUS'], ...users.map(u => [u.id, u.email ?? '-', u.name, u.slug, u.role, u.status])]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map(r => [...r[i]!].length)))
  for (const r of rows) process.stdout.write(r.map((cell, i) => i === r.length - 1 ? cell : cell + ' '.repeat(widths[i]! - [...cell].length)).join('  ') + '\n')
  return 0
}

async function resetPassword (store: Store, identity: IdentityService, config: Config, args: string[]): Promise<number> {
  const user = await named(store, args)
  const { token, expiresAt } = await identity.createReset(user.id, SYSTEM)
  // The link the API's reset answers (`/admin/reset#<token>`), on this deployment's base URL.
  process.stdout.write(`${config.publicBaseUrl}/admin/reset#${token}\n`)
  process.stderr.write(`a password reset for ${user.email ?? user.slug}, valid until ${expiresAt.toISOString()}, once: pass the link on\n`)
  return 0
}

async function suspend (store: Store, identity: IdentityService, args: string[]): Promise<number> {
  const user = await named(store, args)
  if (user.status === 'suspended') {
    process.stderr.write(`${user.email ?? user.slug} is suspended already\n`)
    return 0
  }
  // As `PATCH /users/{id} {"status":"suspended"}` by an admin: the owner protected, every session
  // ended, the user's generation moved on (their tokens and keys stop), `user.suspended` recorded.
  const after = await store.transaction(async uow => {
    const before = await uow.identity.userById(user.id)
    if (before === null) throw new Refusal(`no user ${user.id}`)
    return await identity.editUser(uow, SYSTEM, before, { status: 'suspended' })
  }, { actor: SYSTEM_ACTOR })
  if (after === null) throw new Refusal('the user changed meanwhile: try again')
  process.stderr.write(`${after.email ?? after.slug} is suspended: their sessions and keys stop\n`)
  return 0
}

/**
 * `users create|list|reset-password|suspend`, through the identity service (its rules, its
 * events, with the actor `system`). Every refusal is one line on standard error, and a non-zero exit.
 */
export async function usersCommand (sub: string | undefined, args: string[], store: Store, config: Config, usage: string): Promise<number> {
  const identity = new IdentityService(store, systemClock, config, await store.serverSecret())
  try {
    if (sub === 'create') return await create(store, identity, args)
    if (sub === 'list') return await list(store, args)
    if (sub === 'reset-password') return await resetPassword(store, identity, config, args)
    if (sub === 'suspend') return await suspend(store, identity, args)
  } catch (err) {
    if (err instanceof Refusal || err instanceof AppError) {
      process.stderr.write(`users ${sub}: ${err.message}\n`)
      return err instanceof Refusal ? err.code : 1
    }
    throw err
  }
  process.stderr.write(usage + '\n')
  return 2
}
