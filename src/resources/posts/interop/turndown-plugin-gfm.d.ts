// The plugin ships no types: its one use here is handing its `gfm` plugin to turndown.
declare module '@joplin/turndown-plugin-gfm' {
  import type TurndownService from 'turndown'
  const plugins: { gfm: TurndownService.Plugin }
  export default plugins
}
