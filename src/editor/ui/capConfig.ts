import { oneditcancel, oneditprepare, oneditsave } from "./capConfig/dialog";
import { capConfigLabel, capConfigValidators } from "./capConfig/validators";
import { t } from "./i18n";

/** cap-config's editor: what its registerType (nodes/cap-config.html) refers to. */
export const capConfig = {
  validate: capConfigValidators,
  paletteLabel: (): string => t("cap-config.paletteLabel"),
  label: capConfigLabel,
  oneditprepare,
  oneditsave,
  oneditcancel,
};
