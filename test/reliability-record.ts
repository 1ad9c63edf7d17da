import fs from 'node:fs'

export interface ReliabilityResult {
  /** What was tested, as the table shows it. */
  test: string
  /** What was injected. */
  injected: string
  /** How many times. */
  count: number
  /** What happened. */
  result: string
}

/**
 * Records a reliability figure for docs/reliability.md when `RELIABILITY_RECORD` names a file
 * (`npm run reliability` sets it); otherwise does nothing. One JSON object per line.
 */
export function recordResult (key: string, result: ReliabilityResult): void {
  const file = process.env.RELIABILITY_RECORD
  if (file === undefined || file === '') return
  fs.appendFileSync(file, JSON.stringify({ key, ...result }) + '\n')
}
