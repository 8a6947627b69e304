import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { startPanel } from '../shared/startPanel';
import { RewardCurveApp } from './rewardCurveApp';

startPanel('rewardCurve', RewardCurveApp);
