import net from 'node:net'

/** A port nothing listens on now: fixed ones collided with other benchmarks on a shared machine. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => { resolve(port) })
    }).on('error', reject)
  })
}
