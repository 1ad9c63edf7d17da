import { ConfigError } from '../config.ts'
import { runCli } from './commands.ts'

runCli(process.argv.slice(2)).then(code => {
  if (code >= 0) process.exit(code)
}, (err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`bad setting ${err.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
