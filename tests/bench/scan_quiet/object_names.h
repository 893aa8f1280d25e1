/* Precision corpus of the secret scanner (tests/bench/scan_precision.sh):
 * look-alikes that must give no finding. Public headers of cryptographic
 * libraries name their objects with strings whose macro names hold token
 * or password; the strings are words in camelCase, not secrets. Written
 * for this corpus in the style of such a header. */
#ifndef SCAN_QUIET_OBJECT_NAMES_H
#define SCAN_QUIET_OBJECT_NAMES_H

#define SN_id_regCtrl_regToken  "id-regCtrl-regToken"
#define NID_id_regCtrl_regToken 315
#define OBJ_id_regCtrl_regToken OBJ_id_regCtrl, 1L

#define LN_pkcs9_challengePassword  "challengePassword"
#define NID_pkcs9_challengePassword 54

#define SN_id_pwdAuthMethod_token     "id-pwdAuthMethodV2"
#define SN_id_smime_aa_timeStampToken "id-smime-aa-timeStampToken"
#define LN_id_smime_aa_timeStampToken "timeStampTokenAttribute"
#define SN_id_cmc_authTokenData       "id-cmc-authTokenData"
#define SN_id_PasswordBasedMAC        "id-PasswordBasedMAC"
#define LN_id_PasswordBasedMAC        "password based MAC"
#define SN_secretKeyBag               "secretKeyBagAttribute"
#define LN_tokenBinding_secretKey     "tokenBindingSecretKey"
#define SN_sha256_token               "sha256WithRSAEncryption"
#define SN_id_regCtrl_tokenEncrKey    "id-regCtrl-protocolEncrKey"

#endif
