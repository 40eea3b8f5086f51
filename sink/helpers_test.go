package sink

type sqlxTx = txn
