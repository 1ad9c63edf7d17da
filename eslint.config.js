import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['node_modules/**', 'data/**', 'coverage/**', 'dist/**', '.ci/node24/**'] }),
]
