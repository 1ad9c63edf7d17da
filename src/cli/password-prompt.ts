/**
 * A password from the terminal: typed without echo when standard input is a terminal (asked twice,
 * the prompts on standard error), else the first line of standard input (so that a script or a
 * test can pipe it in). Null when nothing was given (end of input, or Ctrl-C / Ctrl-D at the prompt).
 */
export async function readPassword (prompt: string, input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Promise<string | null> {
  if (input.isTTY !== true) return await firstLine(input)
  const first = await typed(prompt, input, output)
  if (first === null) return null
  const again = await typed(`${prompt.replace(/:\s*$/, '')} (again): `, input, output)
  if (again === null) return null
  if (again !== first) throw new Error('the two passwords differ')
  return first
}

/** The first line of a stream that is no terminal (its `\r\n` or `\n` dropped); null at once-empty input. */
async function firstLine (input: NodeJS.ReadableStream): Promise<string | null> {
  return await new Promise((resolve, reject) => {
    let text = ''
    const done = (line: string | null) => {
      input.off('data', onData)
      input.off('end', onEnd)
      input.off('error', reject)
      input.pause()
      resolve(line)
    }
    const onData = (chunk: Buffer | string) => {
      text += String(chunk)
      const nl = text.indexOf('\n')
      if (nl >= 0) done(text.slice(0, nl).replace(/\r$/, ''))
    }
    const onEnd = () => { done(text === '' ? null : text.replace(/\r$/, '')) }
    input.on('data', onData)
    input.once('end', onEnd)
    input.once('error', reject)
    input.resume()
  })
}

/** One password typed at a terminal in raw mode: nothing echoed; backspace deletes; Enter ends. */
async function typed (prompt: string, input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string | null> {
  output.write(prompt)
  input.setRawMode(true)
  input.setEncoding('utf8')
  return await new Promise(resolve => {
    let chars: string[] = []
    const finish = (value: string | null) => {
      input.off('data', onData)
      input.setRawMode(false)
      input.pause()
      output.write('\n')
      resolve(value)
    }
    const onData = (chunk: string) => {
      for (const c of chunk) {
        if (c === '\r' || c === '\n') return finish(chars.join(''))
        if (c === '\u0003' || c === '\u0004') return finish(null)
        if (c === '\u007f' || c === '\b') chars = chars.slice(0, -1)
        else if (c >= ' ') chars.push(c)
      }
    }
    input.on('data', onData)
    input.resume()
  })
}
