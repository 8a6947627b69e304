import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { startPanel } from '../shared/startPanel';
import { WeightsApp } from './weightsApp';

startPanel('rewardWeights', WeightsApp);
