import { startPanel } from '../shared/startPanel';
import { ComparisonApp } from './comparisonApp';

startPanel('comparison', ComparisonApp);
