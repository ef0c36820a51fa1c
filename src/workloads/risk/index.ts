/** Monte Carlo risk workloads: option pricing and portfolio VaR (see run.ts for the runtime entry points). */
export { blackScholes, normalCdf, type EuropeanTerms, type OptionRight } from './black-scholes.js';
export { estimate, mcRange, mcSpec, streamCount, type McSpec, type McTerms } from './mc.js';
export { philox4x32, keyFromSeed, streamBlock, u32ToUniform, blockNormals } from './philox.js';
export {
  EXAMPLE_PORTFOLIO,
  OPTION_DEFAULTS,
  validateOptionParams,
  validateVarParams,
  type OptionConfig,
  type OptionParams,
  type VarConfig,
  type VarParams,
} from './params.js';
export {
  INSTRUMENT_TYPES,
  parsePortfolio,
  cholesky,
  type Portfolio,
  type PortfolioJson,
} from './portfolio.js';
export { riskFigures, scenarioLosses, portfolioValue, type RiskFigures } from './var.js';
export { priceOption, portfolioVar, type OptionResult, type VarResult } from './run.js';
