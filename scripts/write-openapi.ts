import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { buildApp } from '../src/app.ts'
import { createContext, loadConfig, openStore } from '../src/context.ts'

/**
 * Writes the OpenAPI document the service serves at /openapi.json, built by the app itself on a
 * throw-away SQLite store, to the file named by the first argument (`npm run lint:api` lints it).
 */
export async function writeOpenApi (file: string): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-openapi-'))
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', BOOTSTRAP_ADMIN_KEY: 'false', AUTH_JWT_SECRET: 'x'.repeat(32) })
  const store = await openStore(config)
  try {
    await store.migrate()
    const app = await buildApp(await createContext(config, { store }))
    await app.ready()
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
    fs.writeFileSync(file, JSON.stringify(app.swagger(), null, 2) + '\n')
    await app.close()
  } finally {
    await store.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2] ?? 'build/openapi.json'
  await writeOpenApi(file)
  process.stdout.write(`wrote ${file}\n`)
}
