import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'

/** Whether servers and load can be pinned to cores of their own (taskset and 2 cores or more). */
export const pinned = spawnSync('sh', ['-c', 'command -v taskset']).status === 0 && os.cpus().length > 1

/** `cmd args` pinned to `core` when pinning is possible, else as it is. */
export function pin (core: number, cmd: string, args: string[]): [string, string[]] {
  return pinned ? ['taskset', ['-c', String(core), cmd, ...args]] : [cmd, args]
}

/** CPU seconds (user + system) the process has used. */
export function cpuSeconds (pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  // utime and stime, in clock ticks: 100 per second on Linux (sysconf(_SC_CLK_TCK)).
  return (Number(fields[11]) + Number(fields[12])) / 100
}
