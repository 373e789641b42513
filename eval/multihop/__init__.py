"""eval.multihop"""
