import { parseArgs } from 'node:util'
import { ConfigError } from '../config.ts'
import { generateApiKey } from '../http/pipeline/auth.ts'
import type { Resource } from '../http/contract/resources.ts'
import { FACILITIES, RESOURCES } from '../registry.ts'
import { startServer } from '../server.ts'
import { knownScopes, loadConfig, openStore } from '../context.ts'
import { usersCommand } from './users.ts'

const usage = (SCOPES: readonly string[]) => `Usage: blog <command>

Commands:
  serve                                   run the HTTP service (the default)
  migrate                                 apply database migrations, then exit
  keys create --name N --scopes "S1 S2"   make an API key and print it once
                                          (scopes: ${SCOPES.join(' ')})
  keys list                               list API keys (never their secrets)
  keys revoke <name-or-id>                revoke an API key
  users create --email E --name N --role R
                                          make a user (roles: contributor author editor
                                          admin owner; owner only while there is none);
                                          the password is asked for, or read as one line
                                          from standard input; prints the user's id
  users list [--json]                     list users (id, email, name, slug, role, status)
  users reset-password --email E | --id I print a password reset link (an hour, once)
  users suspend --email E | --id I        suspend a user: their sessions and keys stop

Settings come from the environment; see the configuration table (docs/configuration.md).`

/**
 * Runs one command; resolves with the exit code (-1: serving, do not exit). `resources` are the
 * registry's unless a test gives its own (their scopes are the ones `keys create` takes).
 */
export async function runCli (argv: string[], { env = process.env, resources = RESOURCES }: { env?: NodeJS.ProcessEnv, resources?: readonly Resource[] } = {}): Promise<number> {
  const parts = [...FACILITIES, ...resources]
  const SCOPES = knownScopes(parts)
  const USAGE = usage(SCOPES)
  const [command = 'serve', ...rest] = argv
  const asksHelp = (a: string) => a === 'help' || a === '--help' || a === '-h'
  // Help anywhere (`keys --help`, `keys create -h`) is help, before any setting is read.
  if (asksHelp(command) || rest.some(asksHelp)) {
    process.stdout.write(USAGE + '\n')
    return 0
  }
  let config
  try {
    config = loadConfig(env, parts)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`bad setting ${err.message}\n`)
      return 2
    }
    throw err
  }

  if (command === 'serve') {
    await startServer(config)
    return -1
  }

  const store = await openStore(config, parts)
  try {
    await store.migrate()
    if (command === 'migrate') {
      process.stdout.write(`migrations applied (${store.kind})\n`)
      return 0
    }
    if (command === 'keys') {
      const [sub, ...args] = rest
      if (sub === 'create') {
        let values: { name?: string, scopes?: string }
        try {
          values = parseArgs({ args, options: { name: { type: 'string' }, scopes: { type: 'string' } } }).values
        } catch (err) {
          process.stderr.write(`keys create: ${err instanceof Error ? err.message : String(err)}\n`)
          return 2
        }
        const name = values.name?.trim() ?? ''
        const scopes = (values.scopes ?? '').split(/[\s,]+/).filter(Boolean)
        if (!/^[A-Za-z0-9._@-]{1,100}$/.test(name)) {
          process.stderr.write('keys create: --name must be 1–100 characters of letters, digits and . _ @ -\n')
          return 2
        }
        const unknown = scopes.filter(s => !SCOPES.includes(s))
        if (scopes.length === 0 || unknown.length > 0) {
          process.stderr.write(`keys create: --scopes must list some of: ${SCOPES.join(' ')}${unknown.length > 0 ? ` (unknown: ${unknown.join(' ')})` : ''}\n`)
          return 2
        }
        if ((await store.apiKeys.list()).some(k => k.name === name && k.revokedAt === null)) {
          process.stderr.write(`keys create: a live key named "${name}" exists; revoke it first\n`)
          return 1
        }
        const key = generateApiKey()
        await store.apiKeys.create({ id: key.id, name, scopes: [...new Set(scopes)], hash: key.hash }, new Date())
        process.stdout.write(`${key.token}\n`)
        process.stderr.write(`API key "${name}" (${scopes.join(' ')}) made. It is shown only now; only its hash is kept.\n`)
        return 0
      }
      if (sub === 'list') {
        for (const k of await store.apiKeys.list()) {
          process.stdout.write(`${k.id}  ${k.name}  ${k.scopes.join(' ')}  created ${k.createdAt}${k.revokedAt ? `  revoked ${k.revokedAt}` : ''}\n`)
        }
        return 0
      }
      if (sub === 'revoke' && args[0]) {
        const done = await store.apiKeys.revoke(args[0], new Date())
        process.stderr.write(done ? `revoked ${args[0]}\n` : `no live key named ${args[0]}\n`)
        return done ? 0 : 1
      }
    }
    if (command === 'users') {
      const [sub, ...args] = rest
      return await usersCommand(sub, args, store, config, USAGE)
    }
    process.stderr.write(USAGE + '\n')
    return 2
  } finally {
    await store.close()
  }
}
